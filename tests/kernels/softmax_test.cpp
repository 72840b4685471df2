// softmax along any axis, numerically stable for large inputs.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

TEST(Softmax, EveryAxisMatchesReference) {
  const std::vector<int64_t> dims{3, 4, 5};
  auto x = HostTensor::from_floats(DType::kF32, {3, 4, 5}, random_floats(60, 60, -4.0f, 4.0f));
  for (int64_t axis : {-1, 0, 1, 2, -3}) {
    HostTensor y(DType::kF32, {3, 4, 5});
    ASSERT_TRUE(run_kernel("softmax", {x.view()}, {y.view()}, {{"axis", axis}}).ok());
    const int normalized = static_cast<int>(axis < 0 ? axis + 3 : axis);
    EXPECT_TRUE(all_close(y.values(), ref::softmax(x.values(), dims, normalized), 1e-6)) << "axis " << axis;
  }
}

TEST(Softmax, DefaultAxisLargeValuesAndInPlace) {
  auto x = HostTensor::from_floats(DType::kF32, {2, 3}, {1000.0f, 1001.0f, 1002.0f, -1e4f, 0.0f, -1e4f});
  const auto before = x.values();
  ASSERT_TRUE(run_kernel("softmax", {x.view()}, {x.view()}).ok());
  EXPECT_TRUE(all_close(x.values(), ref::softmax(before, {2, 3}, 1), 1e-6));
}

TEST(Softmax, RejectsBadAxisAndShape) {
  HostTensor x(DType::kF32, {2, 3});
  HostTensor y(DType::kF32, {2, 3});
  EXPECT_TRUE(fails_with(run_kernel("softmax", {x.view()}, {y.view()}, {{"axis", int64_t{2}}}),
                         ErrorCode::kOutOfRange, {"softmax", "axis 2"}));
  EXPECT_TRUE(fails_with(run_kernel("softmax", {x.view()}, {y.view()}, {{"axis", 1.5}}),
                         ErrorCode::kInvalidArgument, {"softmax", "'axis' is float, expected int"}));
  HostTensor y_bad(DType::kF32, {3, 2});
  EXPECT_TRUE(fails_with(run_kernel("softmax", {x.view()}, {y_bad.view()}), ErrorCode::kInvalidArgument,
                         {"softmax", "output has shape [3, 2], expected [2, 3]"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
