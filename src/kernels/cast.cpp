// cast between float dtypes (f32, f16, bf16), and from i64 to i32 (an out-of-range value is an
// error). Widening is exact; narrowing rounds to nearest even. The output may be the input
// itself when both have the same element size.
#include <climits>
#include <cstring>

#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

namespace {

// i64 -> i32 (index inputs for backends without 64-bit integers).
Status narrow_to_i32(KernelContext& ctx) {
  constexpr std::string_view op = "cast";
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kI32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, false));
  if (ctx.attrs.has("dtype")) {
    KESTREL_ASSIGN_OR_RETURN(std::string name, ctx.attrs.get_string("dtype"));
    if (name != "i32") return make_error(ErrorCode::kInvalidArgument, "{}: an i64 x casts to i32 only, not {}", op, name);
  }
  const auto* src = x.as<const int64_t>();
  auto* dst = out.as<int32_t>();
  for (int64_t i = 0; i < x.numel(); ++i) {
    if (src[i] < INT32_MIN || src[i] > INT32_MAX)
      return make_error(ErrorCode::kOutOfRange, "{}: element {} ({}) does not fit i32", op, i, src[i]);
    dst[i] = static_cast<int32_t>(src[i]);
  }
  return ok_status();
}

}  // namespace

Result<CastOperands> check_float_cast(const KernelContext& ctx) {
  constexpr std::string_view op = "cast";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  if (ctx.attrs.has("dtype")) {
    KESTREL_ASSIGN_OR_RETURN(std::string name, ctx.attrs.get_string("dtype"));
    auto target = dtype_from_name(name);
    if (!target)
      return make_error(ErrorCode::kInvalidArgument, "{}: dtype '{}' is not a known dtype", op, name);
    if (*target != out.dtype)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: dtype attribute is {} but the output has dtype {}", op, name,
                        dtype_name(out.dtype));
  }
  const bool same_width = dtype_element_size(x.dtype) == dtype_element_size(out.dtype);
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, same_width));
  return CastOperands{x.data, out.data, x.dtype, out.dtype, x.numel()};
}

Status cast_kernel(KernelContext& ctx) {
  KESTREL_RETURN_IF_ERROR(check_arity("cast", ctx, 1, 1, 1));
  if (ctx.inputs[0].dtype == DType::kI64 && ctx.outputs[0].dtype == DType::kI32) return narrow_to_i32(ctx);
  KESTREL_ASSIGN_OR_RETURN(const CastOperands x, check_float_cast(ctx));
  if (x.n == 0) return ok_status();
  if (x.from == x.to) {
    if (x.out != x.x) std::memcpy(x.out, x.x, static_cast<size_t>(x.n) * dtype_element_size(x.from));
    return ok_status();
  }
  // Element by element through f32, which holds every f16 and bf16 value exactly; reading
  // element i before writing element i keeps the same-width in-place case correct.
  for (int64_t i = 0; i < x.n; ++i) {
    float value;
    convert_to_f32(x.from, x.x, i, 1, &value);
    store_float(x.to, x.out, i, value);
  }
  return ok_status();
}

}  // namespace kestrel::kernels
