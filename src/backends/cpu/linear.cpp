// linear: y[..., n] = sum_k x[..., k] * weight[n, k] + bias[n]. A constant weight is repacked
// at load (packed_matrix.h; one copy per program, shared by its methods); each call prepares
// its activations (q8: quantized per block, bf16 dot: rounded to bf16 pairs) in the call's
// scratch and splits the output panels over the pool. Validation is the portable kernel's,
// check for check; what the packed kernels do not cover (a weight that is not a constant,
// non-finite activations with q8 weights, q8 with exact activations) runs the portable kernel.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "backends/cpu/cpu_ops.h"
#include "backends/cpu/packed_matrix.h"
#include "kernels/check.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/program/loaded_program.h"
#include "kernels/ops.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::detail {

namespace {

struct LinearState {
  Config config;
  std::shared_ptr<const PackedMatrix> packed;  // null: the portable kernel runs
  const void* source = nullptr;                // the weight bytes that were packed
};

bool uses_bf16_dot(const Config& config, DType dtype) {
  return dtype == DType::kBF16 && config.simd->to_bf16_pairs != nullptr;
}

// The row stride, in words, of the bf16 pairs a call prepares: rows that spread over the L1
// sets, which the tiles read in place. (Copying each tile's block of them to such rows instead
// costs a copy per piece of four panels a thread takes: call by call in one process, the 110M
// shape's bf16 linears ran 6-8% faster with two threads this way, 1% with one.)
int64_t bf16_pair_stride(const PackedLayout& w) { return spread_row_stride(w.steps); }

// fn(r0, r1) on one contiguous share of the M activation rows per pool thread (each row is
// prepared on its own, so the split changes no bit).
template <typename F>
void split_rows(runtime::ThreadPool* pool, int64_t M, F&& fn) {
  const int64_t parts = std::min<int64_t>(M, pool_threads(pool));
  parallel_for(pool, parts, [&](int64_t part, int) { fn(M * part / parts, M * (part + 1) / parts); });
}

// Floats of the per-thread copies of widened f16 panels a call with M rows takes (none for
// one row, or where the kernels widen in registers only).
size_t f16_widen_floats(const Config& config, int64_t M, int threads) {
  return M > 1 ? static_cast<size_t>(config.simd->f16_widen_floats) * static_cast<size_t>(threads) : 0;
}

// The row stride of the copy of the activations an f32 or f16 call with M rows reads, 0 for
// none (the rows in place). Rows that would share L1 sets (K a multiple of 1024: most real
// models) are copied once per call to rows that do not, which every tile then reads in place;
// copying each tile's block instead costs a copy per piece of four panels that a thread takes
// (the pieces of a two-thread call, and every f16 block): call by call in one process, the
// 110M shape's K = 2048 linear ran 5-9% faster with two threads (1.5% with one), Qwen3-0.6B's
// f16 linears 7% faster with one thread and 5% with two.
int64_t activation_copy_stride(const Config& config, const PackedLayout& w, int64_t M) {
  const bool float_rows = w.dtype == DType::kF32 || w.dtype == DType::kF16;
  if (M <= 1 || !float_rows || !rows_share_l1_sets(static_cast<size_t>(w.K) * sizeof(float), config.simd->float_tile_rows))
    return 0;
  return spread_row_stride(w.K);
}

// Scratch bytes a call with M rows takes for its prepared activations (and, for f16 weights,
// the widened panels).
size_t activation_scratch_bytes(const Config& config, const PackedLayout& w, int64_t M, int threads) {
  using runtime::Scratch;
  const auto rows = static_cast<size_t>(M);
  const size_t copy = Scratch::bytes_for<float>(rows * static_cast<size_t>(activation_copy_stride(config, w, M)));
  switch (w.dtype) {
    case DType::kF32:
      return copy;
    case DType::kF16:
      return copy + Scratch::bytes_for<float>(f16_widen_floats(config, M, threads));
    case DType::kQ8: {
      const auto blocks = static_cast<size_t>(w.padded_k() / kQ8BlockSize);
      return Scratch::bytes_for<int8_t>(rows * w.padded_k()) + Scratch::bytes_for<float>(rows * blocks) +
             Scratch::bytes_for<int32_t>(rows * blocks);
    }
    case DType::kBF16:
      if (uses_bf16_dot(config, w.dtype)) return Scratch::bytes_for<uint32_t>(rows * bf16_pair_stride(w));
      // Widened bf16 reads activations in k pairs: an odd K needs a zero-padded copy.
      return w.K % 2 != 0 ? Scratch::bytes_for<float>(rows * w.padded_k()) : 0;
    default:
      return 0;
  }
}

}  // namespace

Result<PreparedKernel> prepare_linear(const KernelPrepareContext& ctx, const void* options) {
  auto state = std::make_shared<LinearState>();
  state->config = *static_cast<const Config*>(options);
  PreparedKernel prepared;
  prepared.state = state;
  // Anything unusual is left to the run-time checks (and the portable kernel): only a well
  // formed constant weight is packed.
  if (ctx.inputs.size() < 2 || ctx.outputs.size() != 1) return prepared;
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  if (w.data == nullptr || w.shape.rank() != 2 || !w.is_contiguous() || x.shape.rank() < 1) return prepared;
  const int64_t N = w.shape[0], K = w.shape[1];
  const bool packable = w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16 ||
                        (w.dtype == DType::kQ8 && K % kQ8BlockSize == 0);
  if (!packable || N == 0 || K == 0 || x.shape.dim(-1) != K) return prepared;
  if (w.dtype == DType::kQ8 && !state->config.q8_quantize_activations) return prepared;

  // One arena per program holds all its packed matrices (none without a program-wide cache).
  std::shared_ptr<PackedArena> arena;
  if (ctx.constants != nullptr && ctx.program != nullptr) {
    // Packed weights are the program's weights plus a little padding per matrix: twice the
    // file is a generous reserve (address space only; the pages written are what counts).
    const size_t capacity = 2 * ctx.program->file_bytes() + (size_t{64} << 20);
    KESTREL_ASSIGN_OR_RETURN(auto shared, ctx.constants->get_or_make("cpu.linear.arena", [&]() -> Result<std::shared_ptr<const void>> {
      KESTREL_ASSIGN_OR_RETURN(auto made, PackedArena::reserve(capacity));
      return std::shared_ptr<const void>(made);
    }));
    arena = std::const_pointer_cast<PackedArena>(std::static_pointer_cast<const PackedArena>(shared));
  }
  auto pack = [&]() -> Result<std::shared_ptr<const void>> {
    KESTREL_ASSIGN_OR_RETURN(auto matrix, PackedMatrix::pack(w.dtype, w.data, N, K, ctx.pool, arena,
                                                                       state->config.simd->q8_biased_weights));
    // Calls read only the packed copy from now on; the file's pages can leave memory.
    KESTREL_ASSIGN_OR_RETURN(const size_t bytes, w.storage_bytes());
    ctx.release_constant({static_cast<const uint8_t*>(w.data), bytes});
    return std::shared_ptr<const void>(matrix);
  };
  std::shared_ptr<const void> packed;
  if (ctx.constants != nullptr) {
    const std::string key = fmt::format("cpu.linear.packed/{}/{}/{}x{}{}", dtype_name(w.dtype), w.data, N, K,
                                        state->config.simd->q8_biased_weights ? "" : "/signed");
    KESTREL_ASSIGN_OR_RETURN(packed, ctx.constants->get_or_make(key, pack));
  } else {
    KESTREL_ASSIGN_OR_RETURN(packed, pack());
  }
  state->packed = std::static_pointer_cast<const PackedMatrix>(packed);
  state->source = w.data;
  const int64_t M = x.numel() / K;
  prepared.scratch_bytes = activation_scratch_bytes(state->config, state->packed->layout(), M, pool_threads(ctx.pool));
  return prepared;
}

Status linear(KernelContext& ctx) {
  const auto* state = static_cast<const LinearState*>(ctx.state);
  if (state == nullptr || state->packed == nullptr || ctx.inputs.size() < 2 || ctx.inputs[1].data != state->source)
    return kernels::linear_kernel(ctx);
  KESTREL_ASSIGN_OR_RETURN(const kernels::LinearDims dims, kernels::check_linear(ctx));
  const PackedLayout& layout = state->packed->layout();
  if (dims.K != layout.K || dims.N != layout.N || ctx.inputs[1].dtype != layout.dtype ||
      (layout.dtype == DType::kQ8 && layout.q8_biased != state->config.simd->q8_biased_weights))
    return kernels::linear_kernel(ctx);  // not the shape that was packed
  if (dims.M == 0) return ok_status();
  const Config& config = state->config;

  LinearOperands op;
  op.w = layout;
  op.M = dims.M;
  op.x = ctx.inputs[0].as<const float>();
  op.x_stride = dims.K;
  op.bias = dims.bias != nullptr ? dims.bias->as<const float>() : nullptr;
  op.y = ctx.outputs[0].as<float>();
  op.stream_prefetch = state->config.stream_prefetch.for_dtype(layout.dtype);
  op.decode_panels = state->config.decode_panels.for_dtype(layout.dtype);
  op.decode_apart = state->config.decode_panels.apart;
  auto out_of_scratch = [&] {
    return make_error(ErrorCode::kInternal, "linear: the call needs more scratch than was reserved at load ({} bytes)",
                      ctx.scratch != nullptr ? ctx.scratch->capacity() : 0);
  };
  runtime::Scratch none;
  runtime::Scratch& scratch = ctx.scratch != nullptr ? *ctx.scratch : none;
  const auto rows = static_cast<size_t>(dims.M);
  if (layout.dtype == DType::kQ8) {
    const int64_t kp = layout.padded_k(), blocks = kp / kQ8BlockSize;
    auto* q = scratch.take<int8_t>(rows * kp);
    auto* scale = scratch.take<float>(rows * blocks);
    auto* corr = scratch.take<int32_t>(rows * blocks);
    if (q == nullptr || scale == nullptr || corr == nullptr) return out_of_scratch();
    // Rows split over the pool when there are several (each row is quantized on its own, so
    // the split changes no bit). A non-finite activation: the reference's arithmetic
    // propagates it exactly, so the portable kernel runs.
    std::atomic<bool> finite{true};
    split_rows(ctx.pool, dims.M, [&](int64_t r0, int64_t r1) {
      if (!config.simd->quantize_q8(op.x + r0 * dims.K, r1 - r0, dims.K, dims.K, kp, q + r0 * kp,
                                    scale + r0 * blocks, corr + r0 * blocks))
        finite.store(false, std::memory_order_relaxed);
    });
    if (!finite.load()) return kernels::linear_kernel(ctx);
    op.xq = q;
    op.x_scale = scale;
    op.x_corr = corr;
  } else if (uses_bf16_dot(config, layout.dtype)) {
    const int64_t stride = bf16_pair_stride(layout);
    auto* pairs = scratch.take<uint32_t>(rows * static_cast<size_t>(stride));
    if (pairs == nullptr) return out_of_scratch();
    // Rows split over the pool (each row is rounded on its own, so the split changes no bit).
    split_rows(ctx.pool, dims.M, [&](int64_t r0, int64_t r1) {
      config.simd->to_bf16_pairs(op.x + r0 * dims.K, r1 - r0, dims.K, dims.K, stride, pairs + r0 * stride);
    });
    op.x_bf16 = pairs;
    op.x_bf16_stride = stride;
  } else if (layout.dtype == DType::kF32 || layout.dtype == DType::kF16) {
    if (const size_t widen = f16_widen_floats(config, dims.M, pool_threads(ctx.pool));
        layout.dtype == DType::kF16 && widen > 0) {
      op.f16_widen = scratch.take<float>(widen);
      if (op.f16_widen == nullptr) return out_of_scratch();
    }
    if (const int64_t stride = activation_copy_stride(config, layout, dims.M); stride > 0) {
      float* copy = scratch.take<float>(rows * static_cast<size_t>(stride));
      if (copy == nullptr) return out_of_scratch();
      const float* x = op.x;
      split_rows(ctx.pool, dims.M, [&](int64_t r0, int64_t r1) {
        for (int64_t m = r0; m < r1; ++m) std::copy(x + m * dims.K, x + (m + 1) * dims.K, copy + m * stride);
      });
      op.x = copy;
      op.x_stride = stride;
    }
  } else if (layout.dtype == DType::kBF16 && dims.K % 2 != 0) {
    auto* padded = scratch.take<float>(rows * layout.padded_k());
    if (padded == nullptr) return out_of_scratch();
    for (int64_t m = 0; m < dims.M; ++m) {
      std::copy(op.x + m * dims.K, op.x + (m + 1) * dims.K, padded + m * layout.padded_k());
      padded[(m + 1) * layout.padded_k() - 1] = 0.0f;
    }
    op.x = padded;
    op.x_stride = layout.padded_k();
  }

  // Each thread takes one contiguous range of panels (one sequential weight stream per thread
  // for decode), in pieces of whole groups of four panels; threads that finish early take pieces
  // from the back of the others' ranges. A prompt chunk goes one group per piece: each piece is
  // long enough to pay for its claim, and coarser pieces left one thread idle at the end of
  // every linear (a 768x768 linear of 128 rows ran 1.6x faster on two threads, now 1.9x).
  const int threads = pool_threads(ctx.pool);
  const int64_t groups = (layout.panels + 3) / 4;
  const int64_t piece = dims.M == 1 ? std::max<int64_t>(1, groups / (int64_t{threads} * 8)) : int64_t{1};
  const SimdKernels& simd = *config.simd;
  parallel_ranges(ctx.pool, layout.panels, 4, piece,
                  [&](int64_t p0, int64_t p1, int thread) { simd.linear_panels(op, p0, p1, thread); });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
