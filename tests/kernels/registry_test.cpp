// The portable registry, kernel lookup errors and the attribute reader.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::kernels::testing {
namespace {

TEST(PortableRegistry, HasEveryOpOfTheContract) {
  const auto registry = portable_kernel_registry();
  const std::vector<std::string> ops{"add",      "argmax",  "attention", "cast",    "embedding", "gelu",
                                     "index_copy", "layer_norm", "linear", "matmul",  "mul",       "reshape",
                                     "rms_norm",   "rope",    "silu",      "silu_mul", "slice",    "softmax",
                                     "transpose"};
  EXPECT_EQ(registry->names(), ops);  // names() is sorted
  for (const auto& op : ops) EXPECT_TRUE(registry->find(op).ok()) << op;
  EXPECT_EQ(portable_kernel_registry().get(), registry.get());  // built once
}

TEST(PortableRegistry, UnknownOpSuggestsClosestName) {
  const auto registry = portable_kernel_registry();
  auto missing = registry->find("lienar");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message(), "no kernel registered for op 'lienar' (did you mean 'linear'?)");
  auto rms = registry->find("rmsnorm");
  ASSERT_FALSE(rms.ok());
  EXPECT_NE(rms.error().message().find("'rms_norm'"), std::string::npos);
  runtime::KernelRegistry empty;
  auto none = empty.find("linear");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message().find("registry is empty"), std::string::npos);
}

TEST(PortableRegistry, LaterRegistrationOverrides) {
  runtime::KernelRegistry registry;
  register_portable_kernels(registry);
  runtime::KernelFn custom = [](runtime::KernelContext&) -> Status { return ok_status(); };
  registry.add("linear", custom);
  auto fn = registry.find("linear");
  ASSERT_TRUE(fn.ok());
  EXPECT_EQ(*fn, custom);
}

TEST(AttrReader, TypedAccessWithClearErrors) {
  const program::Attrs attrs{{"n", int64_t{3}},
                             {"eps", 1e-5},
                             {"style", std::string("half")},
                             {"perm", std::vector<int64_t>{0, 2, 1}},
                             {"empty", std::vector<double>{}}};
  runtime::AttrReader reader("rope", attrs);
  EXPECT_EQ(*reader.get_int("n"), 3);
  EXPECT_DOUBLE_EQ(*reader.get_float("n"), 3.0);
  EXPECT_DOUBLE_EQ(*reader.get_float("eps"), 1e-5);
  EXPECT_EQ(*reader.get_string("style"), "half");
  EXPECT_EQ(*reader.get_ints("perm"), (std::vector<int64_t>{0, 2, 1}));
  EXPECT_TRUE(reader.get_ints("empty")->empty());
  EXPECT_TRUE(reader.has("n"));
  EXPECT_FALSE(reader.has("m"));
  EXPECT_TRUE(fails_with(reader.get_int("m"), ErrorCode::kInvalidArgument, {"rope: missing attribute 'm'"}));
  EXPECT_TRUE(fails_with(reader.get_int("eps"), ErrorCode::kInvalidArgument, {"rope: attribute 'eps' is float, expected int"}));
  EXPECT_TRUE(fails_with(reader.get_string("perm"), ErrorCode::kInvalidArgument, {"'perm' is ints, expected string"}));
  EXPECT_TRUE(fails_with(reader.get_ints("style"), ErrorCode::kInvalidArgument, {"'style' is string, expected ints"}));
  EXPECT_TRUE(fails_with(reader.get_float("style"), ErrorCode::kInvalidArgument, {"'style' is string, expected float"}));
  EXPECT_EQ(reader.get_int_or("m", 7), 7);
  EXPECT_EQ(reader.get_int_or("n", 7), 3);
  EXPECT_DOUBLE_EQ(reader.get_float_or("m", 0.5), 0.5);
  EXPECT_EQ(reader.get_string_or("m", "x"), "x");
  EXPECT_EQ(reader.get_string_or("style", "x"), "half");
}

}  // namespace
}  // namespace kestrel::kernels::testing
