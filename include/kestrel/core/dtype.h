// Element types of tensors in programs, checkpoints and kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "kestrel/core/result.h"

namespace kestrel {

enum class DType : uint8_t {
  kF32 = 0,
  kF16 = 1,
  kBF16 = 2,
  kI32 = 3,
  kI64 = 4,
  kU8 = 5,
  // Block-quantized int8: each block of kQ8BlockSize values along the last axis is stored as
  // one f16 scale followed by kQ8BlockSize int8 values (value = scale * q).
  kQ8 = 6,
};

inline constexpr int64_t kQ8BlockSize = 32;
inline constexpr int64_t kQ8BlockBytes = 2 + kQ8BlockSize;

std::string_view dtype_name(DType dtype);               // "f32", "q8", ...
std::optional<DType> dtype_from_name(std::string_view name);
bool dtype_is_valid(uint32_t raw);                       // for values read from files
bool dtype_is_float(DType dtype);                        // f32, f16, bf16

// Bytes of one element; 0 for kQ8, whose size is defined per block.
size_t dtype_element_size(DType dtype);

// Bytes needed for a tensor of `numel` elements whose last axis has `last_dim` elements.
// kQ8 requires last_dim to be a multiple of kQ8BlockSize.
Result<size_t> dtype_storage_bytes(DType dtype, int64_t numel, int64_t last_dim);

// Scalar conversions (round-to-nearest-even for narrowing).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);

}  // namespace kestrel
