// Binary elementwise ops. b has the shape of a or of a suffix of a's shape; a suffix repeats
// along the leading axes (a residual add, a per-channel scale).
#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Result<BinaryOperands> check_binary(std::string_view op, const KernelContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& a = ctx.inputs[0];
  const TensorView& b = ctx.inputs[1];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "a", a, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "a", a));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "b", b, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "b", b));
  const int ra = a.shape.rank(), rb = b.shape.rank();
  bool suffix = rb <= ra;
  for (int i = 0; suffix && i < rb; ++i) suffix = b.shape[i] == a.shape[ra - rb + i];
  if (!suffix)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: b has shape {}, which is neither a's shape {} nor a suffix of it", op,
                      b.shape.to_string(), a.shape.to_string());
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, a.shape));
  // Element i of the output depends only on element i of a (and of b when the shapes match),
  // so writing over a, or over a same-shaped b, is safe; a broadcast b is re-read and is not.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "a", a, true));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "b", b, rb == ra));
  const int64_t nb = b.numel();
  return BinaryOperands{a.as<const float>(), b.as<const float>(), out.as<float>(), nb == 0 ? 0 : a.numel(), nb};
}

namespace {

template <typename F>
Status binary(std::string_view op, KernelContext& ctx, F f) {
  KESTREL_ASSIGN_OR_RETURN(const BinaryOperands x, check_binary(op, ctx));
  apply_binary(x, 0, x.n, f);
  return ok_status();
}

}  // namespace

Status mul_kernel(KernelContext& ctx) {
  return binary("mul", ctx, [](float x, float y) { return x * y; });
}

Status add_kernel(KernelContext& ctx) {
  return binary("add", ctx, [](float x, float y) { return x + y; });
}

}  // namespace kestrel::kernels
