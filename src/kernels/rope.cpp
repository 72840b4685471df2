// rope: rotates pairs of x[b, h, t, :R] by the angles in row positions[t] of the cos/sin tables,
// where R is the `rotary_dim` attribute (default Dh; partial rotary when smaller); dims R..Dh-1
// pass through unchanged. With `layout` "bthd", x is [B, T, H, Dh] (the same rotation).
//   half:        pairs (i, i + R/2), HF "rotate_half" layout
//   interleaved: pairs (2i, 2i + 1), the original RoFormer / llama2.c layout
#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Result<RopeAttrs> read_rope_attrs(const runtime::AttrReader& attrs) {
  constexpr std::string_view op = "rope";
  KESTREL_ASSIGN_OR_RETURN(std::string style, attrs.get_string("style"));
  if (style != "half" && style != "interleaved")
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: style '{}' is not one of 'half', 'interleaved'", op, style);
  RopeAttrs decoded;
  decoded.interleaved = style == "interleaved";
  KESTREL_ASSIGN_OR_RETURN(decoded.tokens_first, tokens_first_layout(op, attrs));
  if (attrs.has("rotary_dim")) {
    KESTREL_ASSIGN_OR_RETURN(decoded.rotary_dim, attrs.get_int("rotary_dim"));
  }
  return decoded;
}

Result<RopeOperands> check_rope(const KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const RopeAttrs attrs, read_rope_attrs(ctx.attrs));
  return check_rope(ctx, attrs);
}

Result<RopeOperands> check_rope(const KernelContext& ctx, const RopeAttrs& attrs) {
  constexpr std::string_view op = "rope";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 4, 4, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& positions = ctx.inputs[1];
  const TensorView& cos = ctx.inputs[2];
  const TensorView& sin = ctx.inputs[3];
  const TensorView& out = ctx.outputs[0];

  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "x", x, 4));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  const bool tokens_first = attrs.tokens_first;
  const int64_t B = x.shape[0], H = x.shape[tokens_first ? 2 : 1], T = x.shape[tokens_first ? 1 : 2], Dh = x.shape[3];
  const int64_t rotary = attrs.rotary_dim.value_or(Dh);
  if (rotary <= 0 || rotary > Dh || rotary % 2 != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: rotary_dim {} must be even and in [2, head_dim {}]", op, rotary, Dh);
  const int64_t half = rotary / 2;
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "positions", positions, {DType::kI64}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "positions", positions));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "positions", positions, Shape{T}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "cos", cos, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "cos", cos, 2));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "cos", cos));
  const int64_t P = cos.shape[0];
  KESTREL_RETURN_IF_ERROR(check_shape(op, "cos", cos, Shape{P, half}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "sin", sin, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "sin", sin));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "sin", sin, Shape{P, half}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  // In place is fine: each pair is read completely before either element is written.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));

  const int64_t* pos = positions.as<const int64_t>();
  for (int64_t t = 0; t < T; ++t)
    if (pos[t] < 0 || pos[t] >= P)
      return make_error(ErrorCode::kOutOfRange,
                        "{}: position {} (positions element {}) is outside the tables' [0, {})", op,
                        pos[t], t, P);

  RopeOperands r;
  r.x = x.as<const float>();
  r.out = out.as<float>();
  r.positions = pos;
  r.rows = B * H * T;
  r.T = T, r.Dh = Dh, r.half = half, r.rotary = rotary;
  r.tokens_first = tokens_first, r.H = H;
  r.interleaved = attrs.interleaved;
  // Non-f32 tables are converted once for the T rows in use, not once per head.
  if (cos.dtype != DType::kF32 || sin.dtype != DType::kF32) {
    float* cos_rows = scratch_floats(0, static_cast<size_t>(T * half));
    float* sin_rows = scratch_floats(1, static_cast<size_t>(T * half));
    for (int64_t t = 0; t < T; ++t) {
      convert_to_f32(cos.dtype, cos.data, pos[t] * half, half, cos_rows + t * half);
      convert_to_f32(sin.dtype, sin.data, pos[t] * half, half, sin_rows + t * half);
    }
    r.cos = cos_rows, r.sin = sin_rows, r.rows_per_token = true;
  } else {
    r.cos = cos.as<const float>(), r.sin = sin.as<const float>(), r.rows_per_token = false;
  }
  return r;
}

void apply_rope(const RopeOperands& r, int64_t row0, int64_t row1) {
  for (int64_t row = row0; row < row1; ++row) {
    const int64_t t = r.token(row);
    const int64_t table_row = r.rows_per_token ? t : r.positions[t];
    const float* c = r.cos + table_row * r.half;
    const float* s = r.sin + table_row * r.half;
    const float* xi = r.x + row * r.Dh;
    float* yi = r.out + row * r.Dh;
    for (int64_t i = 0; i < r.half; ++i) {
      const int64_t i0 = r.interleaved ? 2 * i : i;
      const int64_t i1 = r.interleaved ? 2 * i + 1 : i + r.half;
      const float x0 = xi[i0], x1 = xi[i1];
      yi[i0] = x0 * c[i] - x1 * s[i];
      yi[i1] = x1 * c[i] + x0 * s[i];
    }
    if (yi != xi)
      for (int64_t i = r.rotary; i < r.Dh; ++i) yi[i] = xi[i];
  }
}

Status rope_kernel(KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const RopeOperands r, check_rope(ctx));
  apply_rope(r, 0, r.rows);
  return ok_status();
}

}  // namespace kestrel::kernels
