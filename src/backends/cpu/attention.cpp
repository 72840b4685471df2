// attention over a static f32 KV cache, one task per (batch, query head). Narrower caches go to
// the portable kernel. Validation is the portable kernel's, check for check.
#include <cmath>
#include <vector>

#include "backends/cpu/avx2.h"
#include "backends/cpu/cpu_ops.h"
#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::cpu::detail {

using namespace kernels::detail;

Status attention(KernelContext& ctx, const Config& config) {
  if (config.isa == Isa::kScalar || ctx.inputs.size() != 4 || ctx.inputs[1].dtype != DType::kF32 ||
      ctx.inputs[2].dtype != DType::kF32)
    return kernels::attention_kernel(ctx);
  constexpr std::string_view op = "attention";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 4, 4, 1));
  const TensorView& q = ctx.inputs[0];
  const TensorView& k = ctx.inputs[1];
  const TensorView& v = ctx.inputs[2];
  const TensorView& positions = ctx.inputs[3];
  TensorView& out = ctx.outputs[0];

  KESTREL_RETURN_IF_ERROR(check_dtype(op, "q", q, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "q", q, 4));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "q", q));
  const int64_t B = q.shape[0], Hq = q.shape[1], T = q.shape[2], Dh = q.shape[3];
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
  // Each task consumes its q rows (scores) before it writes their output rows, and tasks own
  // disjoint heads, so out may be q itself.
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "q", q, true));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "k", k, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "v", v, false));
  KESTREL_ASSIGN_OR_RETURN(double scale_attr,
                           float_attr_or(ctx, "scale", Dh > 0 ? 1.0 / std::sqrt(double(Dh)) : 1.0));
  const float scale = static_cast<float>(scale_attr);

  const int64_t* pos = positions.as<const int64_t>();
  for (int64_t t = 0; t < T; ++t)
    if (pos[t] < 0 || pos[t] >= C)
      return make_error(ErrorCode::kOutOfRange,
                        "{}: position {} (positions element {}) is outside the cache's [0, {})", op,
                        pos[t], t, C);

  const int64_t group = Hq / Hkv;
  const float* qs = q.as<const float>();
  const float* ks = k.as<const float>();
  const float* vs = v.as<const float>();
  float* ys = out.as<float>();
  config.pool->parallel_for(B * Hq, [&](int64_t task) {
    thread_local std::vector<float> scores;
    if (scores.size() < static_cast<size_t>(C)) scores.resize(static_cast<size_t>(C));
    const int64_t b = task / Hq, h = task % Hq;
    const int64_t kv_base = ((b * Hkv) + h / group) * C * Dh;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t q_offset = ((b * Hq + h) * T + t) * Dh;
      attention_row_avx2(qs + q_offset, ks + kv_base, vs + kv_base, pos[t] + 1, Dh, scale, scores.data(),
                         ys + q_offset);
    }
  });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
