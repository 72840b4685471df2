// rms_norm and silu with AVX2. Both are cheap next to linear, single-threaded, and validated
// exactly as the portable kernels are.
#include <cmath>
#include <vector>

#include "backends/cpu/avx2.h"
#include "backends/cpu/cpu_ops.h"
#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::cpu::detail {

using namespace kernels::detail;

Status rms_norm(KernelContext& ctx, const Config& config) {
  if (config.isa == Isa::kScalar) return kernels::rms_norm_kernel(ctx);
  constexpr std::string_view op = "rms_norm";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  const int64_t D = x.shape.dim(-1);
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "weight", w, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "weight", w));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "weight", w, Shape{D}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  KESTREL_ASSIGN_OR_RETURN(double eps_attr, ctx.attrs.get_float("eps"));
  if (!(eps_attr >= 0.0) || !std::isfinite(eps_attr))
    return make_error(ErrorCode::kInvalidArgument, "{}: eps {} must be finite and non-negative", op,
                      eps_attr);
  const float eps = static_cast<float>(eps_attr);

  const int64_t rows = dims_product(x.shape, 0, x.shape.rank() - 1);
  thread_local std::vector<float> weight_f32;
  if (weight_f32.size() < static_cast<size_t>(D)) weight_f32.resize(static_cast<size_t>(D));
  const float* weight = f32_values(w.dtype, w.data, 0, D, weight_f32.data());
  const float* src = x.as<const float>();
  float* dst = out.as<float>();
  for (int64_t r = 0; r < rows; ++r, src += D, dst += D) {
    const double sum_sq = sum_squares_avx2(src, D);
    const float inv = static_cast<float>(1.0 / std::sqrt(sum_sq / static_cast<double>(D) + eps));
    scale_mul_avx2(src, inv, weight, dst, D);
  }
  return ok_status();
}

Status silu(KernelContext& ctx, const Config& config) {
  if (config.isa == Isa::kScalar) return kernels::silu_kernel(ctx);
  constexpr std::string_view op = "silu";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  silu_avx2(x.as<const float>(), out.as<float>(), x.numel());
  return ok_status();
}

}  // namespace kestrel::cpu::detail
