// The q8 block format (see kestrel/core/dtype.h): each block of kQ8BlockSize values along a row
// is one f16 scale (max|x| / 127) followed by kQ8BlockSize int8 values round(x / scale).
// Exporters quantize weights with this; kernels and tests read them back.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"

namespace kestrel::kernels {

// Bytes of one q8 row of `cols` values; `cols` must be a multiple of kQ8BlockSize.
constexpr size_t q8_row_bytes(int64_t cols) {
  return static_cast<size_t>(cols / kQ8BlockSize) * kQ8BlockBytes;
}

// Quantizes a row-major [rows, cols] f32 matrix into rows * q8_row_bytes(cols) bytes at `dst`.
// Errors: cols not a positive multiple of kQ8BlockSize, negative rows, a non-finite value, or a
// block whose scale does not fit in f16.
Status quantize_q8(const float* src, int64_t rows, int64_t cols, uint8_t* dst);

// Expands one q8 row of `cols` values (q8_row_bytes(cols) bytes at `src`) to f32.
Status dequantize_q8_row(const uint8_t* src, int64_t cols, float* dst);

}  // namespace kestrel::kernels
