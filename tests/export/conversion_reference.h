// Independent expectations for weight conversions, written for the tests (not Kestrel's code):
// bf16 widening by bit shift, f16 through the compiler's _Float16, round-to-nearest-even bf16, and
// a q8 check against the float64 definition (scale = max|x| / 127 in f16, q = x / scale rounded).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/dtype.h"

namespace kestrel::exporter::testing {

inline float f32_at(std::span<const uint8_t> bytes, size_t i) {
  float value;
  std::memcpy(&value, bytes.data() + 4 * i, 4);
  return value;
}

inline uint16_t u16_at(std::span<const uint8_t> bytes, size_t i) {
  uint16_t value;
  std::memcpy(&value, bytes.data() + 2 * i, 2);
  return value;
}

// A checkpoint element (f32, f16 or bf16) as a float.
inline float element(std::span<const uint8_t> bytes, DType dtype, size_t i) {
  if (dtype == DType::kF32) return f32_at(bytes, i);
  const uint16_t bits = u16_at(bytes, i);
  if (dtype == DType::kBF16) {
    const uint32_t wide = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &wide, 4);
    return value;
  }
  _Float16 half;
  std::memcpy(&half, &bits, 2);
  return static_cast<float>(half);
}

inline uint16_t to_f16_bits(float value) {
  const auto half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, 2);
  return bits;
}

// Round to nearest, ties to even (finite values).
inline uint16_t to_bf16_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

// The bytes a float tensor should become in `target` (f32, f16 or bf16), plus `add` per element.
inline std::vector<uint8_t> expected_conversion(std::span<const uint8_t> source, DType source_dtype, DType target,
                                                float add = 0) {
  const size_t count = source.size() / dtype_element_size(source_dtype);
  std::vector<uint8_t> out(count * dtype_element_size(target));
  for (size_t i = 0; i < count; ++i) {
    const float value = element(source, source_dtype, i) + add;
    if (target == DType::kF32) {
      std::memcpy(out.data() + 4 * i, &value, 4);
    } else {
      const uint16_t bits = target == DType::kF16 ? to_f16_bits(value) : to_bf16_bits(value);
      std::memcpy(out.data() + 2 * i, &bits, 2);
    }
  }
  return out;
}

// Checks q8 bytes of a [rows, cols] matrix against its source: per block of 32 an f16 scale within
// f16 rounding of max|x| / 127, and every value within half a step of x / scale.
inline void expect_q8_of(std::span<const uint8_t> q8, std::span<const uint8_t> source, DType source_dtype,
                         int64_t rows, int64_t cols, const std::string& what) {
  constexpr int64_t kBlock = 32, kBlockBytes = 2 + kBlock;
  ASSERT_EQ(q8.size(), static_cast<size_t>(rows * (cols / kBlock) * kBlockBytes)) << what;
  size_t failures = 0;
  for (int64_t r = 0; r < rows && failures < 5; ++r) {
    for (int64_t b = 0; b < cols / kBlock; ++b) {
      const uint8_t* block = q8.data() + (r * (cols / kBlock) + b) * kBlockBytes;
      double max_abs = 0;
      for (int64_t i = 0; i < kBlock; ++i)
        max_abs = std::max(max_abs, std::fabs(static_cast<double>(element(source, source_dtype, r * cols + b * kBlock + i))));
      uint16_t scale_bits;
      std::memcpy(&scale_bits, block, 2);
      _Float16 scale_half;
      std::memcpy(&scale_half, &scale_bits, 2);
      const double scale = static_cast<double>(scale_half);
      const double want = max_abs / 127;
      if (std::fabs(scale - want) > want * 0x1p-11 + 1e-12) {
        ADD_FAILURE() << what << " row " << r << " block " << b << ": scale " << scale << ", expected " << want;
        ++failures;
        continue;
      }
      for (int64_t i = 0; i < kBlock; ++i) {
        const double x = element(source, source_dtype, r * cols + b * kBlock + i);
        const auto q = static_cast<int8_t>(block[2 + i]);
        if (std::abs(q) > 127 || (scale > 0 && std::fabs(q * scale - x) > scale * (0.5 + 1e-4))) {
          ADD_FAILURE() << what << " row " << r << " col " << b * kBlock + i << ": q " << int{q} << " * scale " << scale
                        << " is not within half a step of " << x;
          ++failures;
        }
      }
    }
  }
}

}  // namespace kestrel::exporter::testing
