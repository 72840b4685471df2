// argmax over the last axis: the first index of the largest value. NaNs are skipped (a row of
// only NaNs gives 0), so one bad logit does not hide the real maximum.
#include <cmath>

#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Status argmax_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "argmax";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  const int64_t N = x.shape.dim(-1);
  if (N == 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: x has an empty last axis (shape {})", op,
                      x.shape.to_string());
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kI64}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, without_last_dim(x.shape)));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, false));

  const int64_t rows = dims_product(x.shape, 0, x.shape.rank() - 1);
  const float* src = x.as<const float>();
  int64_t* dst = out.as<int64_t>();
  for (int64_t r = 0; r < rows; ++r, src += N) {
    int64_t best = 0;
    for (int64_t i = 1; i < N; ++i)
      if (src[i] > src[best] || (std::isnan(src[best]) && !std::isnan(src[i]))) best = i;
    dst[r] = best;
  }
  return ok_status();
}

}  // namespace kestrel::kernels
