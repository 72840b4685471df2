// Linear weights repacked once at load into panels of 16 output rows, the layout both the
// decode (one activation row) and the prefill (many rows) kernels read.
//
// Within a panel, the 16 outputs are the 16 vector lanes and the reduction dimension k runs
// along memory: one kernel step loads the 16 weights of one k (or of a k pair, or of a q8
// block pair) for all 16 outputs. Each output's sum is therefore one sequential chain over k,
// the same chain whether one activation row or a hundred are multiplied, whatever the vector
// width and however the panels are split between threads: a token's logits do not depend on
// how it was batched.
//
// Formats (bytes per panel per step):
//   f32   [K][16] f32                                      64 B per k
//   f16   [K][16] f16, panels interleaved in pairs: a pair is [K][2][16] f16, so one
//         64-byte line holds a k of both panels         32 B per k
//   bf16  [K/2][16][2] bf16 (k pairs, low half first)      64 B per k pair
//   q8    per pair of 32-value blocks: 2 x 16 f16 scales, then 2 x [8][16][4] weights stored
//         as w + 128 (unsigned, for vpdpbusd) or as w (signed, for maddubs, which would
//         otherwise undo the bias on every load)            1088 B per 64 k
// Rows past N are zero (a biased q8 zero is stored as 128), and so are k past K.
//
// Why f16 pairs: a one-row (decode) call runs one chain of multiply-adds per panel, and an f16
// panel gives one multiply-add per 32 bytes, so one chain at a time is bound by the multiply-add
// latency (28 GB/s on Zen 4, below what the memory gives). Two panels side by side in memory
// are two chains on one memory stream (two panels from two places, two streams, read memory
// slower there).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/runtime/heap_allocator.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::detail {

inline constexpr int64_t kPanelRows = 16;

struct PackedLayout {
  DType dtype = DType::kF32;   // of the source weights: f32, f16, bf16 or q8
  int64_t N = 0, K = 0;        // logical output rows and reduction length
  int64_t panels = 0;          // ceil(N / 16)
  int64_t steps = 0;           // per panel: K (f32, f16), ceil(K / 2) (bf16), ceil(K / 64) (q8)
  int64_t k_per_step = 1;      // 1, 1, 2, 64
  bool q8_biased = true;       // q8: weights stored as w + 128 rather than w
  size_t step_bytes = 0;       // 64, 32, 64, 1088
  size_t panel_bytes = 0;      // steps * step_bytes
  int64_t interleave = 1;      // panels stored side by side step by step: 2 for f16, else 1
  const uint8_t* data = nullptr;

  // K rounded up to whole steps: the row length of activations prepared for this matrix.
  int64_t padded_k() const { return steps * k_per_step; }
  // Bytes from one step of a panel to its next.
  size_t step_stride() const { return step_bytes * static_cast<size_t>(interleave); }
  // Bytes of the stored panels (a last incomplete group of interleaved panels is padded).
  size_t bytes() const {
    return static_cast<size_t>((panels + interleave - 1) / interleave * interleave) * panel_bytes;
  }
  // The first step of panel p.
  const uint8_t* panel(int64_t p) const {
    if (interleave == 1) return data + static_cast<size_t>(p) * panel_bytes;  // no division
    return data + static_cast<size_t>(p / interleave * interleave) * panel_bytes +
           static_cast<size_t>(p % interleave) * step_bytes;
  }
};

inline constexpr size_t kQ8PairBytes = 64 + 2 * 512;

// Anonymous memory for the packed matrices of one program, handed out front to back, with
// transparent huge pages advised: decode streams the weights, and page walks are a large share
// of a stream's cost on small pages. One region for all matrices keeps small ones from each
// occupying a huge page of their own. Only the pages written count towards the resident set.
class PackedArena {
 public:
  // Reserves `capacity` bytes of address space (nothing is committed until written).
  static Result<std::shared_ptr<PackedArena>> reserve(size_t capacity);
  PackedArena(const PackedArena&) = delete;
  PackedArena& operator=(const PackedArena&) = delete;
  // `bytes` at a 64-byte boundary, or null when the reserve is exhausted.
  uint8_t* allocate(size_t bytes);

 private:
  PackedArena() = default;
  runtime::HugePageRegion memory_;
  size_t used_ = 0;
  std::mutex mutex_;
};

// One repacked matrix. Its bytes come from an arena (kept alive by the matrix) or, without one
// or when it is full, from an arena of its own.
class PackedMatrix {
 public:
  // Repacks `weights` ([N, K] row-major, dtype f32/f16/bf16/q8) with the pool's threads; q8
  // weights are stored biased (w + 128) or signed as `q8_biased` says (the kernels' choice).
  static Result<std::shared_ptr<const PackedMatrix>> pack(DType dtype, const void* weights, int64_t N, int64_t K,
                                                          runtime::ThreadPool* pool,
                                                          std::shared_ptr<PackedArena> arena = nullptr,
                                                          bool q8_biased = true);

  const PackedLayout& layout() const { return layout_; }
  size_t bytes() const { return bytes_; }

 private:
  PackedMatrix() = default;
  PackedLayout layout_;
  std::shared_ptr<PackedArena> arena_;
  size_t bytes_ = 0;
};

// The layout a matrix of this dtype and shape gets (data unset).
PackedLayout packed_layout(DType dtype, int64_t N, int64_t K);

}  // namespace kestrel::cpu::detail
