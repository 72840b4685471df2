// attention over a static KV cache, k and v both f32 or both f16 (read as they are stored and
// widened in registers: an f16 cache gives the bits of an f32 cache holding the same values).
// A task is one kv head of one batch row with a block of queries of every query head that
// shares it (in a decode step, up to SimdKernels::attention_task_heads kv heads, whose cache
// rows it reads side by side, or with grouped query heads deep in the cache one, read ahead:
// grouped_decode_one_head): the scores of the whole block are computed one chunk of 16 cache
// rows at a time, then each row's softmax, then the weighted sums of value rows, so the block
// reads each key and value row once. Other caches (bf16, or k and v of different types) go to
// the portable kernel.
// Validation is the portable kernel's, check for check (the `window` attribute of
// sliding-window attention included: 0 or absent is unlimited).
#include <algorithm>

#include "backends/cpu/cpu_ops.h"
#include "kernels/check.h"
#include "kestrel/core/error_helpers.h"
#include "kernels/ops.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::detail {

namespace {

struct AttentionState {
  Config config;
  kernels::AttentionAttrs attrs;
  size_t task_floats = 0;  // scratch per task (per thread)
};

// Whether the SIMD kernels read caches of these types directly.
bool simd_reads_caches(DType k, DType v) { return k == v && (k == DType::kF32 || k == DType::kF16); }

}  // namespace

Result<PreparedKernel> prepare_attention(const KernelPrepareContext& ctx, const void* options) {
  auto state = std::make_shared<AttentionState>();
  state->config = *static_cast<const Config*>(options);
  PreparedKernel prepared;
  KESTREL_ASSIGN_OR_RETURN(state->attrs, kernels::read_attention_attrs(ctx.attrs));
  const bool tokens_first = state->attrs.tokens_first;
  if (ctx.inputs.size() == 4 && ctx.inputs[0].shape.rank() == 4 && ctx.inputs[1].shape.rank() == 4) {
    const int64_t Hq = ctx.inputs[0].shape[tokens_first ? 2 : 1], T = ctx.inputs[0].shape[tokens_first ? 1 : 2];
    const int64_t Hkv = ctx.inputs[1].shape[1], C = ctx.inputs[1].shape[2], Dh = ctx.inputs[1].shape[3];
    if (Hkv > 0 && Hq % Hkv == 0 && Hq > 0) {
      const int threads = pool_threads(ctx.pool);
      const int64_t task_heads = attention_heads_per_task(T, Hkv, threads, state->config.simd->attention_task_heads);
      state->task_floats = attention_scratch_floats(T, Hq / Hkv * task_heads, C, Dh);
      prepared.scratch_bytes = runtime::Scratch::bytes_for<float>(state->task_floats * threads);
    }
  }
  prepared.state = state;
  return prepared;
}

Status attention(KernelContext& ctx) {
  const auto* state = static_cast<const AttentionState*>(ctx.state);
  if (state == nullptr || ctx.inputs.size() != 4 || !simd_reads_caches(ctx.inputs[1].dtype, ctx.inputs[2].dtype))
    return kernels::attention_kernel(ctx);
  KESTREL_ASSIGN_OR_RETURN(const kernels::AttentionDims dims, kernels::check_attention(ctx, state->attrs));
  AttentionOperands op;
  op.q = ctx.inputs[0].as<const float>();
  op.k = ctx.inputs[1].data;
  op.v = ctx.inputs[2].data;
  op.cache_dtype = ctx.inputs[1].dtype;
  op.positions = ctx.inputs[3].as<const int64_t>();
  op.out = ctx.outputs[0].as<float>();
  op.B = dims.B, op.Hq = dims.Hq, op.Hkv = dims.Hkv, op.T = dims.T, op.C = dims.C, op.Dh = dims.Dh;
  op.scale = dims.scale;
  op.window = dims.window;  // checked by check_attention
  op.tokens_first = dims.tokens_first;
  if (op.B * op.Hq * op.T * op.Dh == 0) return ok_status();

  const int64_t group = op.Hq / op.Hkv;
  const int threads = pool_threads(ctx.pool);
  const bool one_head = grouped_decode_one_head(op.T, group, op.cache_dtype, op.positions[0]);
  const SimdKernels& simd = *state->config.simd;
  const int64_t task_heads = one_head ? 1 : attention_heads_per_task(op.T, op.Hkv, threads, simd.attention_task_heads);
  op.prefetch = one_head;
  // Fewer heads per task need less scratch than was reserved (for attention_heads_per_task).
  const size_t task_floats = attention_scratch_floats(op.T, group * task_heads, op.C, op.Dh);
  float* scratch = ctx.scratch != nullptr ? ctx.scratch->take<float>(task_floats * threads) : nullptr;
  if (scratch == nullptr || task_floats > state->task_floats)
    return make_error(ErrorCode::kInternal, "attention: the call needs more scratch than was reserved at load");
  // Each task consumes its q rows (scores) before it writes their output rows, and tasks own
  // disjoint rows, so out may be q itself (the shared check allows exactly that).
  const int64_t per_task = attention_queries_per_task(op.T, group);
  const int64_t query_blocks = (op.T + per_task - 1) / per_task;
  const int64_t head_blocks = (op.Hkv + task_heads - 1) / task_heads;
  // Each thread takes a contiguous range of heads (the rows of q, k and v it wrote itself when
  // the linears before split their outputs the same way), and idle threads take tasks from the
  // back of the others' ranges.
  parallel_ranges(ctx.pool, op.B * head_blocks * query_blocks, 1, 1, [&](int64_t begin, int64_t end, int thread) {
    for (int64_t task = begin; task < end; ++task) {
      const int64_t block = task % query_blocks, heads = task / query_blocks;
      const int64_t b = heads / head_blocks, g0 = heads % head_blocks * task_heads;
      const int64_t t0 = block * per_task, t1 = std::min(op.T, t0 + per_task);
      simd.attention_block(op, b, g0, std::min(task_heads, op.Hkv - g0), t0, t1, scratch + task_floats * thread);
    }
  });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
