#include "backends/cpu/packed_matrix.h"

#include <algorithm>
#include <cstring>

#include "backends/cpu/thread_pool.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/runtime/heap_allocator.h"

namespace kestrel::cpu::detail {

namespace {

// Source element k of row n, as the packed formats store it, for panel p (its first step at
// dst, its steps layout.step_stride() apart).
void pack_panel(const PackedLayout& layout, const uint8_t* src, int64_t p, uint8_t* dst) {
  const int64_t N = layout.N, K = layout.K;
  const int64_t rows = std::min<int64_t>(kPanelRows, N - p * kPanelRows);
  const size_t stride = layout.step_stride();
  switch (layout.dtype) {
    case DType::kF32:
    case DType::kF16: {
      const size_t element = layout.dtype == DType::kF32 ? 4 : 2;
      for (int64_t l = 0; l < rows; ++l) {
        const uint8_t* row = src + static_cast<size_t>(p * kPanelRows + l) * K * element;
        for (int64_t k = 0; k < K; ++k)
          std::memcpy(dst + static_cast<size_t>(k) * stride + l * element, row + k * element, element);
      }
      return;
    }
    case DType::kBF16: {
      for (int64_t l = 0; l < rows; ++l) {
        const uint8_t* row = src + static_cast<size_t>(p * kPanelRows + l) * K * 2;
        for (int64_t k = 0; k < K; ++k)
          std::memcpy(dst + static_cast<size_t>(k / 2) * stride + l * 4 + (k % 2) * 2, row + k * 2, 2);
      }
      return;
    }
    case DType::kQ8: {
      const int64_t blocks = K / kQ8BlockSize;
      const size_t row_bytes = static_cast<size_t>(blocks) * kQ8BlockBytes;
      // The stored form of w is w ^ bias: w + 128 biased, w itself signed. Zero weights are
      // stored as the bias; scales of missing rows and blocks stay 0.
      const uint8_t bias = layout.q8_biased ? 0x80u : 0u;
      for (int64_t s = 0; s < layout.steps; ++s) std::memset(dst + s * kQ8PairBytes + 64, bias, 2 * 512);
      for (int64_t l = 0; l < rows; ++l) {
        const uint8_t* row = src + static_cast<size_t>(p * kPanelRows + l) * row_bytes;
        for (int64_t b = 0; b < blocks; ++b) {
          const uint8_t* block = row + b * kQ8BlockBytes;
          uint8_t* pair = dst + static_cast<size_t>(b / 2) * kQ8PairBytes;
          std::memcpy(pair + (b % 2) * 32 + l * 2, block, 2);
          uint8_t* quads = pair + 64 + (b % 2) * 512;
          for (int i = 0; i < kQ8BlockSize; ++i)
            quads[(i / 4) * 64 + l * 4 + (i % 4)] = static_cast<uint8_t>(block[2 + i] ^ bias);
        }
      }
      return;
    }
    default:
      return;
  }
}

}  // namespace

PackedLayout packed_layout(DType dtype, int64_t N, int64_t K) {
  PackedLayout layout;
  layout.dtype = dtype;
  layout.N = N;
  layout.K = K;
  layout.panels = (N + kPanelRows - 1) / kPanelRows;
  switch (dtype) {
    case DType::kF32:
      layout.steps = K, layout.k_per_step = 1, layout.step_bytes = 64;
      break;
    case DType::kF16:
      layout.steps = K, layout.k_per_step = 1, layout.step_bytes = 32, layout.interleave = 2;
      break;
    case DType::kBF16:
      layout.steps = (K + 1) / 2, layout.k_per_step = 2, layout.step_bytes = 64;
      break;
    default:  // q8
      layout.steps = (K + 63) / 64, layout.k_per_step = 64, layout.step_bytes = kQ8PairBytes;
      break;
  }
  layout.panel_bytes = static_cast<size_t>(layout.steps) * layout.step_bytes;
  return layout;
}

Result<std::shared_ptr<PackedArena>> PackedArena::reserve(size_t capacity) {
  std::shared_ptr<PackedArena> arena(new PackedArena());
  auto region = runtime::HugePageRegion::map(capacity);
  if (!region.ok()) return region.error().with_context("reserving memory for repacked weights");
  arena->memory_ = std::move(*region);
  return arena;
}

uint8_t* PackedArena::allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t start = (used_ + 63) / 64 * 64;
  if (start > memory_.capacity() || bytes > memory_.capacity() - start) return nullptr;
  used_ = start + bytes;
  return memory_.base() + start;
}

Result<std::shared_ptr<const PackedMatrix>> PackedMatrix::pack(DType dtype, const void* weights, int64_t N, int64_t K,
                                                               runtime::ThreadPool* pool,
                                                               std::shared_ptr<PackedArena> arena, bool q8_biased) {
  if (dtype != DType::kF32 && dtype != DType::kF16 && dtype != DType::kBF16 && dtype != DType::kQ8)
    return make_error(ErrorCode::kUnsupported, "cannot repack {} weights", dtype_name(dtype));
  std::shared_ptr<PackedMatrix> matrix(new PackedMatrix());
  matrix->layout_ = packed_layout(dtype, N, K);
  matrix->layout_.q8_biased = q8_biased;
  matrix->bytes_ = matrix->layout_.bytes();
  uint8_t* base = arena != nullptr ? arena->allocate(matrix->bytes_) : nullptr;
  if (base == nullptr) {
    KESTREL_ASSIGN_OR_RETURN(arena, PackedArena::reserve(matrix->bytes_));
    base = arena->allocate(matrix->bytes_);
  }
  matrix->arena_ = std::move(arena);
  matrix->layout_.data = base;

  const auto* src = static_cast<const uint8_t*>(weights);
  const PackedLayout& layout = matrix->layout_;
  // One task per group of interleaved panels: the group's panels share cache lines.
  const int64_t group = layout.interleave;
  parallel_for(pool, (layout.panels + group - 1) / group, [&](int64_t g, int) {
    for (int64_t p = g * group; p < std::min(layout.panels, (g + 1) * group); ++p)
      pack_panel(layout, src, p, const_cast<uint8_t*>(layout.panel(p)));
  });
  return std::shared_ptr<const PackedMatrix>(std::move(matrix));
}

}  // namespace kestrel::cpu::detail
