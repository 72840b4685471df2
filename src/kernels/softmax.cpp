// softmax along one axis, stabilized by subtracting the maximum before exponentiating.
#include <cmath>

#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Status softmax_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "softmax";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  // In place is fine: each element is read (for the max and the exponent) before its write.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis_attr, int_attr_or(ctx, "axis", -1));
  KESTREL_ASSIGN_OR_RETURN(int axis, normalize_axis(op, "axis", axis_attr, x.shape.rank()));

  const int64_t outer = dims_product(x.shape, 0, axis);
  const int64_t n = x.shape[axis];
  const int64_t inner = dims_product(x.shape, axis + 1, x.shape.rank());
  const float* src = x.as<const float>();
  float* dst = out.as<float>();
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t j = 0; j < inner; ++j) {
      // Elements of one softmax are `inner` apart.
      const int64_t base = o * n * inner + j;
      float max = -INFINITY;
      for (int64_t i = 0; i < n; ++i) max = std::fmax(max, src[base + i * inner]);
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(src[base + i * inner] - max);
        dst[base + i * inner] = e;
        sum += e;
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t i = 0; i < n; ++i) dst[base + i * inner] *= inv;
    }
  }
  return ok_status();
}

}  // namespace kestrel::kernels
