// The SIMD kernels of one instruction set, as a table of plain functions. Each table is compiled
// from the same source (simd_kernels.inc) in its own file with its own target extensions, and is
// only handed out for a CPU that has them (kernels_for). No validation here: callers validated.
//
// Every kernel computes each output element with a fixed sequence of operations that does not
// depend on how many rows, heads or queries a call carries, nor on how the work is split between
// threads: see packed_matrix.h for linear; attention reduces each dot product and each softmax
// sum in a fixed order (attention_block.inc) over absolutely aligned chunks of 16 cache slots.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>

#include "backends/cpu/packed_matrix.h"
#include "kernels/ops.h"
#include "kestrel/backends/cpu/cpu_kernels.h"

namespace kestrel::cpu::detail {

// One linear call on a packed matrix: y[m, n] = x[m, :] . w[n, :] + bias[n] for m < M.
struct LinearOperands {
  PackedLayout w;
  int64_t M = 0;
  // f32, f16 and (without a bf16 dot product) bf16 weights: activation rows of `x_stride`
  // floats, at least w.padded_k() of them readable when w.K is odd for bf16.
  const float* x = nullptr;
  int64_t x_stride = 0;
  // bf16 weights with the bf16 dot product: activations as bf16 pairs, w.steps words per row,
  // rows x_bf16_stride words apart.
  const uint32_t* x_bf16 = nullptr;
  int64_t x_bf16_stride = 0;
  // q8 weights: activations quantized per block of 32 (rows of w.padded_k() int8 values and
  // w.padded_k() / 32 scales and bias corrections; see quantize_q8).
  const int8_t* xq = nullptr;
  const float* x_scale = nullptr;
  const int32_t* x_corr = nullptr;
  const float* bias = nullptr;  // [N] or null
  float* y = nullptr;           // [M, N]
  // f16 weights and several rows, where the table widens f16 panels (f16_widen_floats > 0):
  // thread t's scratch for them, f16_widen + t * f16_widen_floats.
  float* f16_widen = nullptr;
  // One row: bytes ahead that each panel stream is prefetched into L1, 0 for none (the
  // registry's choice for this CPU, unit and weight format).
  size_t stream_prefetch = 0;
  // One row: panels read side by side, 1, 2 or 4 (at least 2 for f16; the registry's choice for
  // this CPU, unit and weight format).
  int decode_panels = 1;
  // One row, 4 panels: each tile's groups of panels from separate shares of the range
  // (DecodePanels::apart).
  bool decode_apart = false;
};

// One attention call (docs/ops.md): q [B, Hq, T, Dh], k and v [B, Hkv, C, Dh], out like q
// (may be q itself). The caches hold `cache_dtype` elements, f32 or f16 (IEEE half bits), both
// the same; q and out are f32.
struct AttentionOperands {
  const float* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  DType cache_dtype = DType::kF32;
  const int64_t* positions = nullptr;
  float* out = nullptr;
  int64_t B = 0, Hq = 0, Hkv = 0, T = 0, C = 0, Dh = 0;
  float scale = 1.0f;
  int64_t window = 0;  // > 0: query t sees slots (positions[t] - window, positions[t]]
  // Tasks of one kv head prefetch the key and value rows kGroupedDecodePrefetchRows ahead of
  // the ones they read (grouped_decode_one_head).
  bool prefetch = false;
  // q and out are [B, T, Hq, Dh] (attention's layout "bthd"), else [B, Hq, T, Dh].
  bool tokens_first = false;
  // The float offset of q's (and out's) row for batch b, query head h, query t.
  int64_t q_offset(int64_t b, int64_t h, int64_t t) const {
    return (tokens_first ? (b * T + t) * Hq + h : (b * Hq + h) * T + t) * Dh;
  }
};

struct SimdKernels {
  // Output panels [p0, p1) of every row of the call, on pool thread `thread`.
  void (*linear_panels)(const LinearOperands& op, int64_t p0, int64_t p1, int thread);
  // Quantizes `rows` rows of K floats (stride x_stride) for a q8 matrix with padded_k columns:
  // per block of 32, scale = max|x| / 127 and q = round-to-even(x * 127 / max|x|); corr is
  // -128 * sum(q) (what the stored weight bias adds; only written where the int8 product is
  // biased). Padding is zero. Returns false, leaving the output unspecified, when a value is not
  // finite.
  bool (*quantize_q8)(const float* x, int64_t rows, int64_t K, int64_t x_stride, int64_t padded_k, int8_t* q,
                      float* scale, int32_t* corr);
  // bf16 dot product sets only: rows of K floats as bf16 pairs (round to nearest even), padded
  // with zero to `pairs` words per row. Null elsewhere.
  void (*to_bf16_pairs)(const float* x, int64_t rows, int64_t K, int64_t x_stride, int64_t pairs, uint32_t* out);
  // Attention for batch b, kv heads [g0, g0 + heads), queries [t0, t1) of every query head of
  // their groups (several heads only with one query); `scratch` holds
  // attention_scratch_floats(T, group * heads, C, Dh) floats.
  void (*attention_block)(const AttentionOperands& op, int64_t b, int64_t g0, int64_t heads, int64_t t0, int64_t t1,
                          float* scratch);
  // y = x / sqrt(mean(x^2) + eps) * w for `rows` rows of D values.
  void (*rms_norm_rows)(const float* x, const float* w, float eps, int64_t rows, int64_t D, float* y);
  // y = x / (1 + exp(-x)); y may be x.
  void (*silu)(const float* x, float* y, int64_t n);
  // y = silu(gate) * up, silu's bits times up; y may be gate or up.
  void (*silu_mul)(const float* gate, const float* up, float* y, int64_t n);
  // rope, half style, rows [row0, row1): the portable kernel's bits.
  void (*rope_half_rows)(const kernels::RopeOperands& r, int64_t row0, int64_t row1);
  // f32 -> f16 bits, rounding to nearest even, bit for bit as the core's f32_to_f16.
  void (*f32_to_f16)(const float* x, uint16_t* y, int64_t n);
  // How linear_panels reads packed q8 weights: biased (w + 128, for vpdpbusd, with the
  // corrections quantize_q8 writes) or signed (for maddubs). The packing must match.
  bool q8_biased_weights;
  // Scratch floats per thread that linear_panels takes for a call with f16 weights and
  // several rows (LinearOperands::f16_widen); 0: none.
  int64_t f16_widen_floats;
  // Activation rows in one register tile of an f32 or f16 prompt chunk (rows_share_l1_sets).
  int float_tile_rows;
  // The most kv heads a decode attention task takes (attention_heads_per_task): the rows of
  // one score tile, so that every chunk of keys is one full tile. With AVX2 (3 rows), tasks of
  // 4 heads left a one-row tile per chunk; tasks of 3 took 5-15% less attention time in the
  // 110M model's decode (Dh 64) and 0-4% less in Qwen3-0.6B's (Dh 128).
  int attention_task_heads;
};

// Whether `rows` activation rows `stride_bytes` apart put more than four of them in one L1 set
// (sets repeat every 4 KiB): then a tile's rows evict each other on every step. Rows a multiple
// of 4 KiB apart (K = 1024, 2048, ...: most real models) all fall in one set; rows 3 KiB apart
// (K = 768) fall in four sets, three each, and read in place ran 2-8% faster than copied
// (linear_rows f32 and f16, M512).
inline bool rows_share_l1_sets(size_t stride_bytes, int rows) {
  const size_t offset = stride_bytes % 4096;
  const size_t common = std::gcd(offset == 0 ? size_t{4096} : offset, size_t{4096});
  return (static_cast<size_t>(rows) * common + 4095) / 4096 > 4;
}

// A row stride of at least K floats whose rows spread over the L1 sets: whole 64-byte lines,
// an odd number of them.
inline int64_t spread_row_stride(int64_t K) {
  const int64_t lines = (K + 15) / 16;
  return (lines % 2 == 1 ? lines : lines + 1) * 16;
}

// The table for a SIMD ISA (not kScalar) the CPU supports.
const SimdKernels& simd_kernels(Isa isa);

// One row (query head, query) of an attention task: its q and output rows and its range of
// cache slots [lo, hi].
struct AttentionRow {
  const float* q;
  float* out;
  const void* k;  // its kv head's key and value rows (cache_dtype elements)
  const void* v;
  int64_t lo, hi;
};
inline constexpr int64_t kAttentionRowFloats = sizeof(AttentionRow) / sizeof(float);

// Queries an attention task covers (blocks of queries share their key and value loads), and the
// scratch floats one task needs, a multiple of 16 (each task's scratch stays aligned): per row
// (query head, query), its scores, its AttentionRow, its running maxima (16 lanes) and its sum.
inline int64_t attention_queries_per_task(int64_t T, int64_t group) {
  return T <= 1 ? 1 : std::min<int64_t>(T, std::max<int64_t>(1, 16 / group));
}
// KV heads per attention task: one, except in a decode step (T = 1), where a task reads up to
// `max_heads` heads' cache rows side by side (SimdKernels::attention_task_heads), a few hundred
// bytes of each in turn (one head's rows are short streams, and one core reads several such
// streams at once faster than one after another), as many heads as keep the tasks a multiple
// of the threads.
inline int64_t attention_heads_per_task(int64_t T, int64_t Hkv, int threads, int max_heads) {
  if (T != 1) return 1;
  for (int64_t heads = std::min<int64_t>(max_heads, Hkv); heads > 1; --heads) {
    const int64_t tasks = (Hkv + heads - 1) / heads;
    if (tasks % threads == 0 || tasks >= 4 * threads) return heads;
  }
  return 1;
}
// A decode step with grouped query heads deep in the cache takes one kv head per task instead:
// every key and value load (and f16 widening) is shared by the head's query heads, and its rows
// are read start to end with a software prefetch kGroupedDecodePrefetchRows rows ahead. From
// kGroupedDecodeDepth positions on, this measured faster with f16 caches and 2 or more query
// heads per kv head, and with f32 caches and 4 or more (docs/performance.md, "Decode deep in
// the context": at positions 960-991 the Qwen3-0.6B shape's decode attention took 29% less time
// with f16 caches, Llama-3.2-1B's 44% less, and 25% less with f32 caches); at 128 positions,
// and with f32 caches and 2 query heads per kv head, the several-head tasks were faster.
inline constexpr int64_t kGroupedDecodeDepth = 256;
inline constexpr int64_t kGroupedDecodePrefetchRows = 16;
inline bool grouped_decode_one_head(int64_t T, int64_t group, DType cache_dtype, int64_t position) {
  const int64_t least_group = cache_dtype == DType::kF16 ? 2 : 4;
  return T == 1 && group >= least_group && position >= kGroupedDecodeDepth;
}
inline int64_t attention_row_stride(int64_t C) { return (C + 15) / 16 * 16 + 16; }
// Where a task's row pairs of q (attention_task) start in its scratch, in floats.
inline int64_t attention_pairs_offset(int64_t rows, int64_t C) {
  return (rows * (attention_row_stride(C) + kAttentionRowFloats + 16 + 1) + 15) / 16 * 16;
}
// ... and after them, one chunk of 16 key rows of Dh widened from an f16 cache.
inline size_t attention_scratch_floats(int64_t T, int64_t group, int64_t C, int64_t Dh) {
  const int64_t rows = attention_queries_per_task(T, group) * group;
  const int64_t floats = attention_pairs_offset(rows, C) + (rows + 1) / 2 * 2 * Dh + 16 * Dh;
  return static_cast<size_t>((floats + 15) / 16 * 16);
}

}  // namespace kestrel::cpu::detail
