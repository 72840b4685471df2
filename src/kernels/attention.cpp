// attention over a static KV cache with a causal mask given by positions:
//   out[b, h, t] = sum_{first <= s <= positions[t]} softmax_s(scale * q[b, h, t] . k[b, g, s]) v[b, g, s]
// where g = h / (Hq / Hkv) (grouped-query attention) and first is 0, or, with a sliding
// `window` W > 0, positions[t] - W + 1 (the mask kv > q - W). Slots outside [first, positions[t]]
// are never read, so stale or uninitialized cache contents there cannot leak into the result.
// With `layout` "bthd", q and out are [B, T, Hq, Dh] (the linears' layout; the same arithmetic).
#include <cmath>

#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/dot.h"
#include "kernels/ops.h"
#include "kernels/scratch.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Result<AttentionAttrs> read_attention_attrs(const runtime::AttrReader& attrs) {
  constexpr std::string_view op = "attention";
  AttentionAttrs decoded;
  KESTREL_ASSIGN_OR_RETURN(decoded.tokens_first, tokens_first_layout(op, attrs));
  if (attrs.has("scale")) {
    KESTREL_ASSIGN_OR_RETURN(decoded.scale, attrs.get_float("scale"));
  }
  if (attrs.has("window")) {
    KESTREL_ASSIGN_OR_RETURN(decoded.window, attrs.get_int("window"));
  }
  if (decoded.window < 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: window {} must be 0 (unlimited) or positive", op,
                      decoded.window);
  return decoded;
}

Result<AttentionDims> check_attention(const KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const AttentionAttrs attrs, read_attention_attrs(ctx.attrs));
  return check_attention(ctx, attrs);
}

Result<AttentionDims> check_attention(const KernelContext& ctx, const AttentionAttrs& attrs) {
  constexpr std::string_view op = "attention";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 4, 4, 1));
  const TensorView& q = ctx.inputs[0];
  const TensorView& k = ctx.inputs[1];
  const TensorView& v = ctx.inputs[2];
  const TensorView& positions = ctx.inputs[3];
  const TensorView& out = ctx.outputs[0];

  KESTREL_RETURN_IF_ERROR(check_dtype(op, "q", q, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "q", q, 4));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "q", q));
  const bool tokens_first = attrs.tokens_first;
  const int64_t B = q.shape[0], Hq = q.shape[tokens_first ? 2 : 1], T = q.shape[tokens_first ? 1 : 2], Dh = q.shape[3];
  // Caches may be stored narrower than f32; rows are widened as they are read.
  for (const auto& [name, view] : {std::pair{"k", &k}, std::pair{"v", &v}}) {
    KESTREL_RETURN_IF_ERROR(check_dtype(op, name, *view, {DType::kF32, DType::kF16, DType::kBF16}));
    KESTREL_RETURN_IF_ERROR(check_rank(op, name, *view, 4));
    KESTREL_RETURN_IF_ERROR(check_tensor(op, name, *view));
  }
  const int64_t Hkv = k.shape[1], C = k.shape[2];
  if (k.shape[0] != B)
    return make_error(ErrorCode::kInvalidArgument, "{}: k has batch {} but q has batch {}", op,
                      k.shape[0], B);
  if (k.shape[3] != Dh)
    return make_error(ErrorCode::kInvalidArgument, "{}: k has head_dim {} but q has head_dim {}", op,
                      k.shape[3], Dh);
  if (Hkv == 0 || Hq % Hkv != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: q has {} heads, not a multiple of k's {} kv heads", op, Hq, Hkv);
  KESTREL_RETURN_IF_ERROR(check_shape(op, "v", v, k.shape));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "positions", positions, {DType::kI64}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "positions", positions));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "positions", positions, Shape{T}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, q.shape));
  // The q row is consumed (scores) before its output row is written, so out may be q itself.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "q", q, true));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "k", k, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "v", v, false));
  const float scale = static_cast<float>(attrs.scale.value_or(Dh > 0 ? 1.0 / std::sqrt(double(Dh)) : 1.0));
  const int64_t window = attrs.window;

  const int64_t* pos = positions.as<const int64_t>();
  for (int64_t t = 0; t < T; ++t)
    if (pos[t] < 0 || pos[t] >= C)
      return make_error(ErrorCode::kOutOfRange,
                        "{}: position {} (positions element {}) is outside the cache's [0, {})", op,
                        pos[t], t, C);

  return AttentionDims{B, Hq, Hkv, T, C, Dh, scale, window, tokens_first};
}

Status attention_kernel(KernelContext& ctx) {
  KESTREL_ASSIGN_OR_RETURN(const AttentionDims dims, check_attention(ctx));
  const TensorView& q = ctx.inputs[0];
  const TensorView& k = ctx.inputs[1];
  const TensorView& v = ctx.inputs[2];
  const int64_t* pos = ctx.inputs[3].as<const int64_t>();
  const TensorView& out = ctx.outputs[0];
  const int64_t B = dims.B, Hq = dims.Hq, Hkv = dims.Hkv, T = dims.T, C = dims.C, Dh = dims.Dh;
  const float scale = dims.scale;
  const int64_t group = Hkv > 0 ? Hq / Hkv : 1;
  float* scores = scratch_floats(0, static_cast<size_t>(C));
  float* k_row = scratch_floats(1, static_cast<size_t>(Dh));
  float* v_row = scratch_floats(2, static_cast<size_t>(Dh));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kv_base = ((b * Hkv) + h / group) * C * Dh;  // element offset of [b, g, 0, 0]
      for (int64_t t = 0; t < T; ++t) {
        const int64_t q_offset = dims.q_offset(b, h, t);
        const float* qi = q.as<const float>() + q_offset;
        const int64_t first = dims.first_slot(pos[t]), last = pos[t];
        float max = -INFINITY;
        for (int64_t s = first; s <= last; ++s) {
          const float* ks = f32_values(k.dtype, k.data, kv_base + s * Dh, Dh, k_row);
          scores[s] = dot_f32(qi, ks, Dh) * scale;
          max = std::fmax(max, scores[s]);
        }
        float sum = 0.0f;
        for (int64_t s = first; s <= last; ++s) {
          scores[s] = std::exp(scores[s] - max);
          sum += scores[s];
        }
        float* yi = out.as<float>() + q_offset;
        for (int64_t d = 0; d < Dh; ++d) yi[d] = 0.0f;
        for (int64_t s = first; s <= last; ++s) {
          const float* vs = f32_values(v.dtype, v.data, kv_base + s * Dh, Dh, v_row);
          const float p = scores[s];
          for (int64_t d = 0; d < Dh; ++d) yi[d] += p * vs[d];
        }
        const float inv = 1.0f / sum;
        for (int64_t d = 0; d < Dh; ++d) yi[d] *= inv;
      }
    }
  }
  return ok_status();
}

}  // namespace kestrel::kernels
