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

Status silu_kernel(KernelContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_unary("silu", ctx));
  // x / (1 + e^-x): for very negative x the denominator overflows to inf and the result is -0,
  // which is the correct limit (x * sigmoid(x) would compute inf * 0 there).
  apply(ctx, [](float x) { return x / (1.0f + std::exp(-x)); });
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
