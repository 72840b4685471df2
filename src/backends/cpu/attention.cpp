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
  KESTREL_ASSIGN_OR_RETURN(const kernels::AttentionDims dims, kernels::check_attention(ctx));
  const TensorView& q = ctx.inputs[0];
  const TensorView& k = ctx.inputs[1];
  const TensorView& v = ctx.inputs[2];
  const int64_t* pos = ctx.inputs[3].as<const int64_t>();
  TensorView& out = ctx.outputs[0];
  const int64_t B = dims.B, Hq = dims.Hq, Hkv = dims.Hkv, T = dims.T, C = dims.C, Dh = dims.Dh;
  const float scale = dims.scale;
  // Each task consumes its q rows (scores) before it writes their output rows, and tasks own
  // disjoint heads, so out may be q itself (the shared check allows exactly that).
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
      const int64_t first = dims.first_slot(pos[t]);  // sliding window: later slots only
      attention_row_avx2(qs + q_offset, ks + kv_base + first * Dh, vs + kv_base + first * Dh, pos[t] + 1 - first, Dh,
                         scale, scores.data(), ys + q_offset);
    }
  });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
