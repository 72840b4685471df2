// rms_norm and layer_norm over the last axis. Row statistics accumulate in double: they are
// cheap next to the row itself and keep the oracle accurate for wide rows.
#include <cmath>

#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

namespace {

// Shared validation: x f32 [..., D], per-channel params [D] of a float dtype, output like x
// (the output may be x itself: each row is fully read before it is written).
Status check_norm(std::string_view op, const KernelContext& ctx, size_t params) {
  const TensorView& x = ctx.inputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  const int64_t D = x.shape.dim(-1);
  static constexpr const char* kNames[] = {"weight", "bias"};
  for (size_t i = 0; i < params; ++i) {
    const TensorView& p = ctx.inputs[1 + i];
    KESTREL_RETURN_IF_ERROR(check_dtype(op, kNames[i], p, {DType::kF32, DType::kF16, DType::kBF16}));
    KESTREL_RETURN_IF_ERROR(check_tensor(op, kNames[i], p));
    KESTREL_RETURN_IF_ERROR(check_shape(op, kNames[i], p, Shape{D}));
  }
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  return ok_status();
}

Result<float> read_eps(std::string_view op, const KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(double eps, ctx.attrs.get_float("eps"));
  if (!(eps >= 0.0) || !std::isfinite(eps))
    return make_error(ErrorCode::kInvalidArgument, "{}: eps {} must be finite and non-negative", op,
                      eps);
  return static_cast<float>(eps);
}

}  // namespace

Status rms_norm_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "rms_norm";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  KESTREL_RETURN_IF_ERROR(check_norm(op, ctx, 1));
  KESTREL_ASSIGN_OR_RETURN(float eps, read_eps(op, ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  const int64_t D = x.shape.dim(-1);
  const int64_t rows = dims_product(x.shape, 0, x.shape.rank() - 1);
  const float* weight = f32_values(w.dtype, w.data, 0, D, scratch_floats(0, static_cast<size_t>(D)));
  const float* src = x.as<const float>();
  float* dst = ctx.outputs[0].as<float>();
  for (int64_t r = 0; r < rows; ++r, src += D, dst += D) {
    double sum_sq = 0.0;
    for (int64_t i = 0; i < D; ++i) sum_sq += static_cast<double>(src[i]) * src[i];
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(D) + eps));
    for (int64_t i = 0; i < D; ++i) dst[i] = src[i] * inv * weight[i];
  }
  return ok_status();
}

Status layer_norm_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "layer_norm";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 3, 1));
  const size_t params = ctx.inputs.size() - 1;
  KESTREL_RETURN_IF_ERROR(check_norm(op, ctx, params));
  KESTREL_ASSIGN_OR_RETURN(float eps, read_eps(op, ctx));
  const TensorView& x = ctx.inputs[0];
  const int64_t D = x.shape.dim(-1);
  const int64_t rows = dims_product(x.shape, 0, x.shape.rank() - 1);
  const TensorView& w = ctx.inputs[1];
  const float* weight = f32_values(w.dtype, w.data, 0, D, scratch_floats(0, static_cast<size_t>(D)));
  const float* bias = nullptr;
  if (params == 2) {
    const TensorView& b = ctx.inputs[2];
    bias = f32_values(b.dtype, b.data, 0, D, scratch_floats(1, static_cast<size_t>(D)));
  }
  const float* src = x.as<const float>();
  float* dst = ctx.outputs[0].as<float>();
  for (int64_t r = 0; r < rows; ++r, src += D, dst += D) {
    // Two passes (mean, then squared deviations) avoid the cancellation of E[x^2] - E[x]^2.
    double sum = 0.0;
    for (int64_t i = 0; i < D; ++i) sum += src[i];
    const double mean = sum / static_cast<double>(D);
    double sum_sq = 0.0;
    for (int64_t i = 0; i < D; ++i) sum_sq += (src[i] - mean) * (src[i] - mean);
    const double inv = 1.0 / std::sqrt(sum_sq / static_cast<double>(D) + eps);
    for (int64_t i = 0; i < D; ++i) {
      const float normalized = static_cast<float>((src[i] - mean) * inv);
      dst[i] = normalized * weight[i] + (bias != nullptr ? bias[i] : 0.0f);
    }
  }
  return ok_status();
}

}  // namespace kestrel::kernels
