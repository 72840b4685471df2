// Method execution: arena-planned intermediates, constants from segments, caller-bound I/O,
// delegate output binding by exported index, and clear errors for missing kernels/backends.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "kestrel/program/writer.h"
#include "kestrel/runtime/method.h"

namespace kestrel::runtime {
namespace {

using program::DelegateCall;
using program::KernelCall;
using program::MethodSpec;
using program::ProgramSpec;
using program::ValueKind;
using program::ValueSpec;

// Test kernels written here so this suite depends only on the runtime.
Status add_kernel(KernelContext& ctx) {
  const float* a = ctx.inputs[0].as<float>();
  const float* b = ctx.inputs[1].as<float>();
  float* out = ctx.outputs[0].as<float>();
  for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i) out[i] = a[i] + b[i];
  return ok_status();
}

Status scale_kernel(KernelContext& ctx) {
  auto factor = ctx.attrs.get_float("factor");
  if (!factor.ok()) return factor.error();
  const float* a = ctx.inputs[0].as<float>();
  float* out = ctx.outputs[0].as<float>();
  for (int64_t i = 0; i < ctx.outputs[0].numel(); ++i) out[i] = static_cast<float>(a[i] * *factor);
  return ok_status();
}

std::shared_ptr<KernelRegistry> test_kernels() {
  auto registry = std::make_shared<KernelRegistry>();
  registry->add("add", add_kernel);
  registry->add("scale", scale_kernel);
  return registry;
}

ValueSpec value(std::string name, ValueKind kind, std::vector<int64_t> shape = {4}) {
  ValueSpec spec;
  spec.name = std::move(name);
  spec.kind = kind;
  spec.shape = std::move(shape);
  return spec;
}

std::vector<uint8_t> float_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// out = (x + c) * 2 + x, with the intermediates in the arena.
ProgramSpec kernel_program() {
  ProgramSpec spec;
  spec.segments.push_back(float_bytes({1, 2, 3, 4}));
  MethodSpec method;
  method.name = "forward";
  method.values.push_back(value("x", ValueKind::kInput));
  auto c = value("c", ValueKind::kConstant);
  c.constant = {0, 0, 16};
  method.values.push_back(c);
  auto t0 = value("t0", ValueKind::kIntermediate);
  t0.arena_offset = 0;
  method.values.push_back(t0);
  auto t1 = value("t1", ValueKind::kIntermediate);
  t1.arena_offset = 64;
  method.values.push_back(t1);
  method.values.push_back(value("out", ValueKind::kOutput));
  method.inputs = {0};
  method.outputs = {4};
  method.instructions.push_back(KernelCall{"add", {0, 1}, {2}, {}});
  method.instructions.push_back(KernelCall{"scale", {2}, {3}, {{"factor", 2.0}}});
  method.instructions.push_back(KernelCall{"add", {3, 0}, {4}, {}});
  method.arena_bytes = 128;
  spec.methods.push_back(method);
  return spec;
}

std::shared_ptr<Program> load(const ProgramSpec& spec, std::shared_ptr<const KernelRegistry> kernels,
                              std::shared_ptr<const BackendRegistry> backends = nullptr) {
  auto bytes = program::serialize_program(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = program::LoadedProgram::load_bytes(*bytes);
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  auto program = Program::from_loaded(*loaded, std::move(kernels), std::move(backends));
  EXPECT_TRUE(program.ok());
  return *program;
}

TEST(Method, RunsKernelsWithConstantsAndArena) {
  auto program = load(kernel_program(), test_kernels());
  auto method = program->load_method("forward");
  ASSERT_TRUE(method.ok()) << method.error().to_string();
  std::vector<float> x{10, 20, 30, 40}, out(4);
  ASSERT_TRUE((*method)->set_input(0, TensorView::contiguous(DType::kF32, {4}, x.data())).ok());
  ASSERT_TRUE((*method)->set_output(0, TensorView::contiguous(DType::kF32, {4}, out.data())).ok());
  ASSERT_TRUE((*method)->execute().ok());
  for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(out[i], (x[i] + (i + 1)) * 2 + x[i]);
  // Rebinding the input to other memory takes effect on the next execute.
  std::vector<float> y{1, 1, 1, 1};
  ASSERT_TRUE((*method)->set_input(0, TensorView::contiguous(DType::kF32, {4}, y.data())).ok());
  ASSERT_TRUE((*method)->execute().ok());
  EXPECT_FLOAT_EQ(out[3], (1 + 4) * 2 + 1);
}

// The instructions' views are filled once at load; binding memory must still reach every view
// of the bound value, and of the aliases that share its storage, on the next execute.
TEST(Method, RebindingReachesOutputsAndAliases) {
  ProgramSpec spec;
  MethodSpec method;
  method.name = "forward";
  method.values.push_back(value("x", ValueKind::kInput));
  auto view_of_x = value("x_view", ValueKind::kAlias);
  view_of_x.alias_of = 0;
  method.values.push_back(view_of_x);
  method.values.push_back(value("out", ValueKind::kOutput));
  method.inputs = {0};
  method.outputs = {2};
  method.instructions.push_back(KernelCall{"scale", {1}, {2}, {{"factor", 3.0}}});
  spec.methods.push_back(method);
  auto program = load(spec, test_kernels());
  auto loaded = program->load_method("forward");
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  Method& forward = **loaded;
  std::vector<float> x{1, 2, 3, 4}, y{5, 6, 7, 8}, out_a(4), out_b(4);
  ASSERT_TRUE(forward.set_input(0, TensorView::contiguous(DType::kF32, {4}, x.data())).ok());
  ASSERT_TRUE(forward.set_output(0, TensorView::contiguous(DType::kF32, {4}, out_a.data())).ok());
  ASSERT_TRUE(forward.execute().ok());
  EXPECT_EQ(out_a, (std::vector<float>{3, 6, 9, 12}));
  ASSERT_TRUE(forward.set_input(0, TensorView::contiguous(DType::kF32, {4}, y.data())).ok());
  ASSERT_TRUE(forward.set_output(0, TensorView::contiguous(DType::kF32, {4}, out_b.data())).ok());
  ASSERT_TRUE(forward.execute().ok());
  EXPECT_EQ(out_b, (std::vector<float>{15, 18, 21, 24}));
  EXPECT_EQ(out_a, (std::vector<float>{3, 6, 9, 12}));  // the first output is no longer written
  // Binding the same memory again changes nothing.
  ASSERT_TRUE(forward.set_input(0, TensorView::contiguous(DType::kF32, {4}, y.data())).ok());
  ASSERT_TRUE(forward.execute().ok());
  EXPECT_EQ(out_b, (std::vector<float>{15, 18, 21, 24}));
}

TEST(Method, ProfilesEveryInstructionWhenAsked) {
  // "scale" sleeps, so its row must hold at least the slept time: the profile charges each
  // instruction its own time (a lower bound only; nothing here depends on the machine's speed).
  static constexpr auto kNap = std::chrono::milliseconds(3);
  auto kernels = test_kernels();
  kernels->add("scale", [](KernelContext& ctx) {
    std::this_thread::sleep_for(kNap);
    return scale_kernel(ctx);
  });
  auto program = load(kernel_program(), kernels);
  auto method = std::move(program->load_method("forward")).value();
  std::vector<float> x{10, 20, 30, 40}, out(4);
  ASSERT_TRUE(method->set_input(0, TensorView::contiguous(DType::kF32, {4}, x.data())).ok());
  ASSERT_TRUE(method->set_output(0, TensorView::contiguous(DType::kF32, {4}, out.data())).ok());
  ASSERT_TRUE(method->execute().ok());
  EXPECT_FALSE(method->profiling());
  EXPECT_TRUE(method->profile().empty());  // off by default: nothing is measured

  method->enable_profiling();
  ASSERT_TRUE(method->profiling());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(method->execute().ok());
  const auto& rows = method->profile();
  ASSERT_EQ(rows.size(), 3u);
  const std::vector<std::string> ops{"add", "scale", "add"};
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(rows[i].op, ops[i]);
    EXPECT_EQ(rows[i].calls, 2);
    EXPECT_GE(rows[i].seconds, 0.0);
  }
  EXPECT_GE(rows[1].seconds, 2 * std::chrono::duration<double>(kNap).count());
  EXPECT_FLOAT_EQ(out[3], (40 + 4) * 2 + 40);  // profiling changes no result

  method->clear_profile();
  for (const auto& row : method->profile()) {
    EXPECT_EQ(row.calls, 0);
    EXPECT_EQ(row.seconds, 0.0);
  }
  ASSERT_TRUE(method->execute().ok());
  EXPECT_EQ(method->profile()[1].calls, 1);
}

TEST(Method, RejectsUnboundAndMismatchedIo) {
  auto program = load(kernel_program(), test_kernels());
  auto method = std::move(program->load_method("forward")).value();
  auto status = method->execute();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("input 0 ('x') is not bound"), std::string::npos);
  std::vector<float> wrong(5);
  status = method->set_input(0, TensorView::contiguous(DType::kF32, {5}, wrong.data()));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("'x' expects f32 [4] but was given f32 [5]"), std::string::npos);
  EXPECT_FALSE(method->set_input(3, TensorView::contiguous(DType::kF32, {4}, wrong.data())).ok());
}

TEST(Method, UnknownKernelAndMethodNamed) {
  auto kernels = std::make_shared<KernelRegistry>();
  kernels->add("add", add_kernel);
  auto program = load(kernel_program(), kernels);
  auto method = program->load_method("forward");
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(method.error().message().find("scale"), std::string::npos) << method.error().message();
  auto missing = program->load_method("decode");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("no method 'decode' (methods: forward)"), std::string::npos);
}

// A backend computing (a+b, a-b, a*b) that enumerates its graph outputs in a shuffled order.
class ShuffledBackend : public BackendInterface {
 public:
  explicit ShuffledBackend(bool available = true) : available_(available) {}
  std::string_view id() const override { return "shuffled"; }
  Status is_available() const override {
    if (available_) return ok_status();
    return Error(ErrorCode::kUnavailable, "libshuffled.so not found");
  }
  Result<DelegateInstance> init(std::span<const uint8_t> payload, const CompileSpecs& specs,
                                const DelegateContext& context) override {
    // Both inputs and all three outputs are the method's own I/O; nothing is a constant.
    EXPECT_EQ(context.method, "forward");
    EXPECT_EQ(context.method_inputs, (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(context.method_outputs, (std::vector<int32_t>{0, 1, 2}));
    EXPECT_EQ(context.constant(0), nullptr);
    EXPECT_EQ(std::string(payload.begin(), payload.end()), "payload");
    EXPECT_EQ(specs.count("mode"), 1u);
    ++inits;
    // Reported order: product (exported 2), sum (exported 0), difference (exported 1).
    return DelegateInstance{this, {2, 0, 1}};
  }
  Status execute(void*, std::span<const TensorView> in, std::span<const TensorView> out) override {
    const float* a = in[0].as<float>();
    const float* b = in[1].as<float>();
    for (int64_t i = 0; i < in[0].numel(); ++i) {
      out[0].as<float>()[i] = a[i] * b[i];
      out[1].as<float>()[i] = a[i] + b[i];
      out[2].as<float>()[i] = a[i] - b[i];
    }
    return ok_status();
  }
  void destroy(void*) override { ++destroys; }
  int inits = 0, destroys = 0;

 private:
  bool available_;
};

ProgramSpec delegate_program() {
  ProgramSpec spec;
  spec.segments.push_back({'p', 'a', 'y', 'l', 'o', 'a', 'd'});
  program::DelegateSpec delegate;
  delegate.backend_id = "shuffled";
  delegate.payload_segment = 0;
  delegate.compile_specs["mode"] = {'1'};
  spec.delegates.push_back(delegate);
  MethodSpec method;
  method.name = "forward";
  for (const char* name : {"a", "b"}) method.values.push_back(value(name, ValueKind::kInput));
  for (const char* name : {"sum", "difference", "product"}) method.values.push_back(value(name, ValueKind::kOutput));
  method.inputs = {0, 1};
  method.outputs = {2, 3, 4};
  method.instructions.push_back(DelegateCall{0, {0, 1}, {2, 3, 4}});
  spec.methods.push_back(method);
  return spec;
}

TEST(Method, DelegateOutputsBoundInExportedOrder) {
  auto backend = std::make_shared<ShuffledBackend>();
  auto backends = std::make_shared<BackendRegistry>();
  backends->add(backend);
  auto program = load(delegate_program(), std::make_shared<KernelRegistry>(), backends);
  {
    auto method = program->load_method("forward");
    ASSERT_TRUE(method.ok()) << method.error().to_string();
    std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8}, sum(4), difference(4), product(4);
    ASSERT_TRUE((*method)->set_input(0, TensorView::contiguous(DType::kF32, {4}, a.data())).ok());
    ASSERT_TRUE((*method)->set_input(1, TensorView::contiguous(DType::kF32, {4}, b.data())).ok());
    ASSERT_TRUE((*method)->set_output(0, TensorView::contiguous(DType::kF32, {4}, sum.data())).ok());
    ASSERT_TRUE((*method)->set_output(1, TensorView::contiguous(DType::kF32, {4}, difference.data())).ok());
    ASSERT_TRUE((*method)->set_output(2, TensorView::contiguous(DType::kF32, {4}, product.data())).ok());
    ASSERT_TRUE((*method)->execute().ok());
    for (int i = 0; i < 4; ++i) {
      EXPECT_FLOAT_EQ(sum[i], a[i] + b[i]);
      EXPECT_FLOAT_EQ(difference[i], a[i] - b[i]);
      EXPECT_FLOAT_EQ(product[i], a[i] * b[i]);
    }
    EXPECT_EQ(backend->inits, 1);
  }
  EXPECT_EQ(backend->destroys, 1);  // the method released its delegate
}

TEST(Method, MissingOrUnavailableBackendNamed) {
  auto program = load(delegate_program(), std::make_shared<KernelRegistry>(), std::make_shared<BackendRegistry>());
  auto method = program->load_method("forward");
  ASSERT_FALSE(method.ok());
  EXPECT_NE(method.error().message().find("backend 'shuffled' is not registered"), std::string::npos)
      << method.error().message();

  auto backends = std::make_shared<BackendRegistry>();
  backends->add(std::make_shared<ShuffledBackend>(false));
  program = load(delegate_program(), std::make_shared<KernelRegistry>(), backends);
  method = program->load_method("forward");
  ASSERT_FALSE(method.ok());
  EXPECT_EQ(method.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(method.error().message().find("needs backend 'shuffled'"), std::string::npos);
  EXPECT_NE(method.error().message().find("libshuffled.so not found"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::runtime
