// Contiguous f32 dot product. Eight independent accumulators let the compiler vectorize the
// loop without -ffast-math (a single accumulator is a serial dependency chain).
#pragma once

#include <cstdint>

namespace kestrel::kernels::detail {

inline float dot_f32(const float* a, const float* b, int64_t n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += a[i + j] * b[i + j];
  float tail = 0.0f;
  for (; i < n; ++i) tail += a[i] * b[i];
  return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7])) + tail;
}

}  // namespace kestrel::kernels::detail
