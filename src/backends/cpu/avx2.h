// AVX2 + FMA + F16C kernels. These functions are compiled with a target attribute (the rest of
// the build stays portable) and must only be called after the CPU was checked for the three
// extensions (best_supported_isa() == Isa::kAvx2). No validation here: callers validated.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel/core/dtype.h"

namespace kestrel::cpu::detail {

// The block dot product of the q8 x q8 path.
enum class Int8Dot : uint8_t {
  kMaddubs,     // AVX2: maddubs + madd
  kAvxVnni,     // AVX-VNNI vpdpbusd
  kAvx512Vnni,  // AVX512-VNNI + VL vpdpbusd on 256-bit vectors
};

// Software prefetch distance along the weight stream of the decode kernels. Decode reads
// every weight once, and the hardware prefetchers alone left the loads waiting on memory
// (measured on a shared 2-core VM: q8 decode went from ~55 to ~110 tokens/s on one thread);
// a few KB ahead covers the latency. Prefetches never fault, so running past the end of the
// weights is harmless.
inline constexpr int64_t kStreamPrefetchBytes = 4096;

// One linear call: y[m, n] = x[m, :] . w[n, :] + bias[n] for m < M, n < N.
struct LinearArgs {
  DType dtype = DType::kF32;  // of w: f32, f16, bf16 or q8
  const void* w = nullptr;    // [N, K]
  const float* x = nullptr;   // [M, K]
  const float* bias = nullptr;
  float* y = nullptr;         // [M, N]
  int64_t M = 0, K = 0, N = 0;
  // q8 weights with activations quantized to q8 (int8 dot products): the x rows as int8
  // [M, K] and their per-block scales [M, K / 32]. Null: q8 weights are widened to f32 instead.
  const int8_t* xq = nullptr;
  const float* xd = nullptr;
  Int8Dot int8_dot = Int8Dot::kMaddubs;
};

// Output columns [n0, n1) of every row. n0 should be a multiple of 4 so that the grouping of
// weight rows (and so the rounding) does not depend on how the rows were split.
void linear_rows_avx2(const LinearArgs& args, int64_t n0, int64_t n1);

// The q8 x q8 rows (args.xq set), one copy per block dot product; linear_rows_avx2 dispatches.
namespace int8_avx2 {
void q8_int8_rows(const LinearArgs& args, int64_t n0, int64_t n1);
}
namespace int8_avxvnni {
void q8_int8_rows(const LinearArgs& args, int64_t n0, int64_t n1);
}
namespace int8_avx512vnni {
void q8_int8_rows(const LinearArgs& args, int64_t n0, int64_t n1);
}

// Quantizes `rows` rows of `cols` (a multiple of 32) values to int8 with one f32 scale per
// block of 32 (max|x| / 127, values rounded to nearest). Returns false, leaving the output
// unspecified, when a value is not finite.
bool quantize_rows_q8_avx2(const float* x, int64_t rows, int64_t cols, int8_t* q, float* scales);

float dot_f32_avx2(const float* a, const float* b, int64_t n);
// y[i] += a * x[i]
void axpy_f32_avx2(float a, const float* x, float* y, int64_t n);
void scale_f32_avx2(float a, float* y, int64_t n);
// Sum of squares of `n` values.
float sum_squares_avx2(const float* x, int64_t n);
// y[i] = x[i] * inv * w[i]
void scale_mul_avx2(const float* x, float inv, const float* w, float* y, int64_t n);
// One attention query row against `count` f32 cache rows of Dh values (k and v at their first
// row): y = softmax(scale * q . k) v. `scores` holds count floats of scratch. y may be q.
void attention_row_avx2(const float* q, const float* k, const float* v, int64_t count, int64_t Dh, float scale,
                        float* scores, float* y);
// y[i] = x[i] / (1 + exp(-x[i])); y may be x.
void silu_avx2(const float* x, float* y, int64_t n);

}  // namespace kestrel::cpu::detail
