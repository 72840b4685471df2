// linear: y[..., n] = sum_k x[..., k] * weight[n, k] + bias[n].
#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/dot.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Result<LinearDims> check_linear(const KernelContext& ctx) {
  constexpr std::string_view op = "linear";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 3, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  const TensorView* bias = ctx.inputs.size() == 3 ? &ctx.inputs[2] : nullptr;
  const TensorView& y = ctx.outputs[0];

  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(
      check_dtype(op, "weight", w, {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "weight", w, 2));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "weight", w));
  const int64_t K = x.shape.dim(-1);
  const int64_t N = w.shape[0];
  if (w.shape[1] != K)
    return make_error(ErrorCode::kInvalidArgument, "{}: weight has K={} but x has K={}", op,
                      w.shape[1], K);
  if (bias != nullptr) {
    KESTREL_RETURN_IF_ERROR(check_dtype(op, "bias", *bias, {DType::kF32}));
    KESTREL_RETURN_IF_ERROR(check_tensor(op, "bias", *bias));
    KESTREL_RETURN_IF_ERROR(check_shape(op, "bias", *bias, Shape{N}));
  }
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", y, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", y));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", y, with_last_dim(x.shape, N)));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", y, "x", x, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", y, "weight", w, false));

  return LinearDims{dims_product(x.shape, 0, x.shape.rank() - 1), K, N, bias};
}

Status linear_kernel(KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const LinearDims dims, check_linear(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  const TensorView* bias = dims.bias;
  const TensorView& y = ctx.outputs[0];
  const int64_t K = dims.K, N = dims.N;
  const int64_t M = dims.M;
  const float* xs = x.as<const float>();
  const float* bs = bias != nullptr ? bias->as<const float>() : nullptr;
  float* ys = y.as<float>();
  float* row_scratch = scratch_floats(0, static_cast<size_t>(K));
  // Weight rows outer: each row is read (and converted, for f16/bf16/q8) once per call, then
  // dotted with every x row while it sits in L1. For decode (M = 1) this is one weight pass.
  for (int64_t n = 0; n < N; ++n) {
    const float* wrow = f32_values(w.dtype, w.data, n * K, K, row_scratch);
    const float b = bs != nullptr ? bs[n] : 0.0f;
    for (int64_t m = 0; m < M; ++m) ys[m * N + n] = dot_f32(xs + m * K, wrow, K) + b;
  }
  return ok_status();
}

}  // namespace kestrel::kernels
