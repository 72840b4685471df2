// index_copy: output = dst with slice index[t] along `axis` replaced by src slice t. This is the
// KV-cache update; when the output is dst itself (in place) only the T slices are written.
#include <cstring>

#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Result<IndexCopyOperands> check_index_copy(const KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const int64_t axis, ctx.attrs.get_int("axis"));
  return check_index_copy(ctx, axis);
}

Result<IndexCopyOperands> check_index_copy(const KernelContext& ctx, int64_t axis_attr) {
  constexpr std::string_view op = "index_copy";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 3, 3, 1));
  const TensorView& dst = ctx.inputs[0];
  const TensorView& index = ctx.inputs[1];
  const TensorView& src = ctx.inputs[2];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "dst", dst, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "dst", dst));
  const size_t elem = dtype_element_size(dst.dtype);
  if (elem == 0)
    return make_error(ErrorCode::kUnsupported, "{}: dst has dtype {}, which has no element size",
                      op, dtype_name(dst.dtype));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "index", index, {DType::kI64}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "index", index, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "index", index));
  KESTREL_ASSIGN_OR_RETURN(int axis, normalize_axis(op, "axis", axis_attr, dst.shape.rank()));
  const int64_t T = index.shape[0];
  const int64_t C = dst.shape[axis];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "src", src, {dst.dtype}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "src", src));
  Shape src_shape = dst.shape;
  src_shape[axis] = T;
  KESTREL_RETURN_IF_ERROR(check_shape(op, "src", src, src_shape));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {dst.dtype}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, dst.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "dst", dst, true));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "src", src, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "index", index, false));

  // All indices are checked before any write, so a bad one leaves an in-place cache intact.
  const int64_t* idx = index.as<const int64_t>();
  for (int64_t t = 0; t < T; ++t)
    if (idx[t] < 0 || idx[t] >= C)
      return make_error(ErrorCode::kOutOfRange,
                        "{}: index {} (index element {}) is outside [0, {}) along axis {}", op,
                        idx[t], t, C, axis);

  IndexCopyOperands x;
  x.out = static_cast<uint8_t*>(out.data);
  x.dst = static_cast<const uint8_t*>(dst.data);
  x.src = static_cast<const uint8_t*>(src.data);
  x.index = idx;
  x.dst_bytes = static_cast<size_t>(dst.numel()) * elem;
  x.outer = dims_product(dst.shape, 0, axis);
  x.T = T, x.C = C;
  x.slice = static_cast<size_t>(dims_product(dst.shape, axis + 1, dst.shape.rank())) * elem;
  return x;
}

void apply_index_copy(const IndexCopyOperands& x, int64_t s0, int64_t s1) {
  if (x.slice == 0) return;
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t o = s / x.T, t = s % x.T;
    std::memcpy(x.out + static_cast<size_t>(o * x.C + x.index[t]) * x.slice, x.src + static_cast<size_t>(s) * x.slice,
                x.slice);
  }
}

Status index_copy_kernel(KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const IndexCopyOperands x, check_index_copy(ctx));
  if (x.out != x.dst && x.dst_bytes > 0) std::memcpy(x.out, x.dst, x.dst_bytes);
  apply_index_copy(x, 0, x.outer * x.T);
  return ok_status();
}

}  // namespace kestrel::kernels
