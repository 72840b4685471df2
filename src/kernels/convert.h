// Inline element conversions for the kernels' inner loops. The core's f16_to_f32 is exact but
// out of line and branchy; weights are converted row by row on the fly, so these stay inline.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "kestrel/core/dtype.h"

namespace kestrel::kernels::detail {

// Exact f16 -> f32 without branches (so conversion loops vectorize): the f16 exponent and
// mantissa placed in the low f32 bits, multiplied by 2^112, rebias the exponent from 15 to 127
// and renormalize subnormals exactly; inf/nan keep their mantissa under an all-ones exponent.
inline float half_to_float(uint16_t h) {
  const uint32_t magnitude = (static_cast<uint32_t>(h) & 0x7fffu) << 13;
  const uint32_t scaled = std::bit_cast<uint32_t>(std::bit_cast<float>(magnitude) * 0x1p112f);
  // A mask rather than ?: keeps the select branch-free.
  const uint32_t special = 0u - static_cast<uint32_t>(magnitude >= (0x7c00u << 13));
  const uint32_t bits = (scaled & ~special) | ((magnitude | 0x7f800000u) & special);
  return std::bit_cast<float>(bits | (static_cast<uint32_t>(h) & 0x8000u) << 16);
}

inline float bfloat_to_float(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

// Expands `cols` values (whole blocks) of q8 storage; no checks, callers validated the shape.
inline void dequantize_q8_blocks(const uint8_t* src, int64_t cols, float* dst) {
  for (int64_t block = 0; block < cols / kQ8BlockSize; ++block) {
    uint16_t scale_bits;
    std::memcpy(&scale_bits, src, sizeof(scale_bits));
    const float scale = half_to_float(scale_bits);
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int64_t i = 0; i < kQ8BlockSize; ++i) dst[i] = scale * static_cast<float>(q[i]);
    src += kQ8BlockBytes;
    dst += kQ8BlockSize;
  }
}

// Converts `n` elements of a float or q8 tensor starting at element `offset` into `dst`.
// For q8, `offset` and `n` must lie on block boundaries (whole rows always do).
inline void convert_to_f32(DType dtype, const void* base, int64_t offset, int64_t n, float* dst) {
  switch (dtype) {
    case DType::kF32:
      std::memcpy(dst, static_cast<const float*>(base) + offset, static_cast<size_t>(n) * sizeof(float));
      return;
    case DType::kF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = half_to_float(src[i]);
      return;
    }
    case DType::kBF16: {
      const uint16_t* src = static_cast<const uint16_t*>(base) + offset;
      for (int64_t i = 0; i < n; ++i) dst[i] = bfloat_to_float(src[i]);
      return;
    }
    case DType::kQ8:
      dequantize_q8_blocks(
          static_cast<const uint8_t*>(base) + offset / kQ8BlockSize * kQ8BlockBytes, n, dst);
      return;
    default:
      return;  // callers only pass float or q8 tensors
  }
}

// `n` f32 values of a float/q8 tensor at element `offset`: f32 data is read in place, other
// dtypes are converted into `scratch` (which must hold n floats).
inline const float* f32_values(DType dtype, const void* base, int64_t offset, int64_t n,
                               float* scratch) {
  if (dtype == DType::kF32) return static_cast<const float*>(base) + offset;
  convert_to_f32(dtype, base, offset, n, scratch);
  return scratch;
}

// Stores one f32 value as a float dtype (round to nearest even for the narrow types).
inline void store_float(DType dtype, void* base, int64_t index, float value) {
  switch (dtype) {
    case DType::kF32:
      static_cast<float*>(base)[index] = value;
      return;
    case DType::kF16:
      static_cast<uint16_t*>(base)[index] = f32_to_f16(value);
      return;
    case DType::kBF16:
      static_cast<uint16_t*>(base)[index] = f32_to_bf16(value);
      return;
    default:
      return;
  }
}

}  // namespace kestrel::kernels::detail
