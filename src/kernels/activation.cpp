// Unary activations on f32 tensors; the output may be the input itself.
#include <cmath>

#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

namespace {

Status check_unary(std::string_view op, const KernelContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  return check_no_overlap(op, "output", out, "x", x, true);
}

template <typename F>
void apply(const KernelContext& ctx, F f) {
  const float* src = ctx.inputs[0].as<const float>();
  float* dst = ctx.outputs[0].as<float>();
  const int64_t n = ctx.inputs[0].numel();
  for (int64_t i = 0; i < n; ++i) dst[i] = f(src[i]);
}

}  // namespace

// x / (1 + e^-x): for very negative x the denominator overflows to inf and the result is -0,
// which is the correct limit (x * sigmoid(x) would compute inf * 0 there).
float silu_value(float x) { return x / (1.0f + std::exp(-x)); }

Status silu_kernel(KernelContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_unary("silu", ctx));
  apply(ctx, silu_value);
  return ok_status();
}

Result<SiluMulOperands> check_silu_mul(const KernelContext& ctx) {
  constexpr std::string_view op = "silu_mul";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& gate = ctx.inputs[0];
  const TensorView& up = ctx.inputs[1];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "gate", gate, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "gate", gate));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "up", up, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "up", up));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "up", up, gate.shape));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, gate.shape));
  // Element i of the output depends only on element i of each input: writing over either is safe.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "gate", gate, true));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "up", up, true));
  return SiluMulOperands{gate.as<const float>(), up.as<const float>(), out.as<float>(), gate.numel()};
}

// silu(gate) * up: the silu and mul kernels' arithmetic in one pass (the exporter folds a gated
// MLP's silu and product into it for the CPU).
Status silu_mul_kernel(KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const SiluMulOperands x, check_silu_mul(ctx));
  for (int64_t i = 0; i < x.n; ++i) x.out[i] = silu_value(x.gate[i]) * x.up[i];
  return ok_status();
}

Status gelu_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "gelu";
  KESTREL_RETURN_IF_ERROR(check_unary(op, ctx));
  KESTREL_ASSIGN_OR_RETURN(std::string approximate, string_attr_or(ctx, "approximate", "none"));
  if (approximate == "none") {
    apply(ctx, [](float x) { return 0.5f * x * (1.0f + std::erf(x * 0.70710678118654752f)); });
  } else if (approximate == "tanh") {
    apply(ctx, [](float x) {
      constexpr float kSqrt2OverPi = 0.79788456080286536f;
      return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + 0.044715f * x * x * x)));
    });
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: approximate '{}' is not one of 'none', 'tanh'", op, approximate);
  }
  return ok_status();
}

}  // namespace kestrel::kernels
