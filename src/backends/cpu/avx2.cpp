// AVX2 + FMA + F16C kernels; see avx2.h. Every function that uses the intrinsics (helpers
// included, so that they inline) carries the target attribute: the file builds with the
// project's default flags and runs only where the CPU was checked for the extensions.
#include "backends/cpu/avx2.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define KESTREL_AVX2 __attribute__((target("avx2,fma,f16c")))

namespace kestrel::cpu::detail {

namespace {

KESTREL_AVX2 inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

KESTREL_AVX2 inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

KESTREL_AVX2 inline float half_to_float(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof(h));
  return _cvtsh_ss(h);
}

// See kStreamPrefetchBytes (avx2.h).
KESTREL_AVX2 inline void prefetch(const uint8_t* p) {
  _mm_prefetch(reinterpret_cast<const char*>(p + kStreamPrefetchBytes), _MM_HINT_T0);
}

// Row readers for the float weight dtypes: eight values widened to f32, or one.
struct F32Row {
  static constexpr size_t kElementBytes = 4;
  KESTREL_AVX2 static inline __m256 load8(const uint8_t* row, int64_t k) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row + 4 * k));
  }
  KESTREL_AVX2 static inline float load1(const uint8_t* row, int64_t k) {
    float v;
    std::memcpy(&v, row + 4 * k, sizeof(v));
    return v;
  }
};

struct F16Row {
  static constexpr size_t kElementBytes = 2;
  KESTREL_AVX2 static inline __m256 load8(const uint8_t* row, int64_t k) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
  }
  KESTREL_AVX2 static inline float load1(const uint8_t* row, int64_t k) { return half_to_float(row + 2 * k); }
};

struct BF16Row {
  static constexpr size_t kElementBytes = 2;
  KESTREL_AVX2 static inline __m256 load8(const uint8_t* row, int64_t k) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  KESTREL_AVX2 static inline float load1(const uint8_t* row, int64_t k) {
    uint16_t b;
    std::memcpy(&b, row + 2 * k, sizeof(b));
    const uint32_t bits = static_cast<uint32_t>(b) << 16;
    float v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
};

// R weight rows (`stride` bytes apart) dotted with one x row. The arithmetic of each row is
// the same for every R, so grouping rows never changes a result.
template <typename Row, int R>
KESTREL_AVX2 inline void float_dot_rows(const float* x, const uint8_t* w, size_t stride, int64_t K, float* out) {
  __m256 acc0[R], acc1[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc0[r] = acc1[r] = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 16 <= K; k += 16) {
    const __m256 x0 = _mm256_loadu_ps(x + k);
    const __m256 x1 = _mm256_loadu_ps(x + k + 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      acc0[r] = _mm256_fmadd_ps(Row::load8(w + r * stride, k), x0, acc0[r]);
      acc1[r] = _mm256_fmadd_ps(Row::load8(w + r * stride, k + 8), x1, acc1[r]);
    }
  }
  if (k + 8 <= K) {
    const __m256 x0 = _mm256_loadu_ps(x + k);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) acc0[r] = _mm256_fmadd_ps(Row::load8(w + r * stride, k), x0, acc0[r]);
    k += 8;
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) {
    float sum = hsum(_mm256_add_ps(acc0[r], acc1[r]));
    for (int64_t t = k; t < K; ++t) sum += Row::load1(w + r * stride, t) * x[t];
    out[r] = sum;
  }
}

// One weight row streamed against one x row (decode): four accumulators, prefetching ahead.
template <typename Row>
KESTREL_AVX2 inline float float_dot_stream(const float* x, const uint8_t* w, int64_t K) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  __m256 acc2 = _mm256_setzero_ps(), acc3 = _mm256_setzero_ps();
  int64_t k = 0;
  for (; k + 32 <= K; k += 32) {
    prefetch(w + k * Row::kElementBytes);
    if constexpr (Row::kElementBytes == 4) prefetch(w + k * Row::kElementBytes + 64);
    acc0 = _mm256_fmadd_ps(Row::load8(w, k), _mm256_loadu_ps(x + k), acc0);
    acc1 = _mm256_fmadd_ps(Row::load8(w, k + 8), _mm256_loadu_ps(x + k + 8), acc1);
    acc2 = _mm256_fmadd_ps(Row::load8(w, k + 16), _mm256_loadu_ps(x + k + 16), acc2);
    acc3 = _mm256_fmadd_ps(Row::load8(w, k + 24), _mm256_loadu_ps(x + k + 24), acc3);
  }
  for (; k + 8 <= K; k += 8) acc0 = _mm256_fmadd_ps(Row::load8(w, k), _mm256_loadu_ps(x + k), acc0);
  float sum = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  for (; k < K; ++k) sum += Row::load1(w, k) * x[k];
  return sum;
}

// One q8 weight row widened to f32 and streamed against one f32 x row (decode).
KESTREL_AVX2 inline float q8_f32_dot_stream(const float* x, const uint8_t* w, int64_t blocks) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const uint8_t* block = w + b * kQ8BlockBytes;
    prefetch(block);
    const float* xb = x + b * kQ8BlockSize;
    const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
    const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
    __m256 s0 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), _mm256_loadu_ps(xb));
    __m256 s1 = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), _mm256_loadu_ps(xb + 8));
    s0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), _mm256_loadu_ps(xb + 16), s0);
    s1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))), _mm256_loadu_ps(xb + 24), s1);
    const __m256 scale = _mm256_set1_ps(half_to_float(block));
    if (b % 2 == 0) {
      acc0 = _mm256_fmadd_ps(scale, _mm256_add_ps(s0, s1), acc0);
    } else {
      acc1 = _mm256_fmadd_ps(scale, _mm256_add_ps(s0, s1), acc1);
    }
  }
  return hsum(_mm256_add_ps(acc0, acc1));
}

// R q8 weight rows widened to f32 on the fly and dotted with an f32 x row.
template <int R>
KESTREL_AVX2 inline void q8_f32_dot_rows(const float* x, const uint8_t* w, size_t stride, int64_t blocks,
                                         float* out) {
  __m256 acc[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    const float* xb = x + b * kQ8BlockSize;
    const __m256 x0 = _mm256_loadu_ps(xb), x1 = _mm256_loadu_ps(xb + 8);
    const __m256 x2 = _mm256_loadu_ps(xb + 16), x3 = _mm256_loadu_ps(xb + 24);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const uint8_t* block = w + r * stride + b * kQ8BlockBytes;
      const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
      const __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 18));
      const __m256 w0 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo));
      const __m256 w1 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
      const __m256 w2 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi));
      const __m256 w3 = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
      __m256 s = _mm256_mul_ps(w0, x0);
      s = _mm256_fmadd_ps(w1, x1, s);
      s = _mm256_fmadd_ps(w2, x2, s);
      s = _mm256_fmadd_ps(w3, x3, s);
      acc[r] = _mm256_fmadd_ps(_mm256_set1_ps(half_to_float(block)), s, acc[r]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) out[r] = hsum(acc[r]);
}

// Several x rows (prefill): weight rows in groups of four (from n0), then single rows; every x
// row per group while the group's weights sit in L1. One x row (decode): each weight row
// streamed once (dot.stream), which keeps one sequential, prefetched stream per thread.
template <typename Dot>
KESTREL_AVX2 inline void for_row_groups(const LinearArgs& a, int64_t n0, int64_t n1, Dot dot) {
  if (a.M == 1) {
    for (int64_t n = n0; n < n1; ++n) a.y[n] = dot.stream(n) + (a.bias != nullptr ? a.bias[n] : 0.0f);
    return;
  }
  float out[4];
  int64_t n = n0;
  for (; n + 4 <= n1; n += 4) {
    for (int64_t m = 0; m < a.M; ++m) {
      dot.template run<4>(m, n, out);
      float* y = a.y + m * a.N + n;
      for (int r = 0; r < 4; ++r) y[r] = out[r] + (a.bias != nullptr ? a.bias[n + r] : 0.0f);
    }
  }
  for (; n < n1; ++n) {
    for (int64_t m = 0; m < a.M; ++m) {
      dot.template run<1>(m, n, out);
      a.y[m * a.N + n] = out[0] + (a.bias != nullptr ? a.bias[n] : 0.0f);
    }
  }
}

template <typename Row>
struct FloatDot {
  const LinearArgs& a;
  template <int R>
  KESTREL_AVX2 inline void run(int64_t m, int64_t n, float* out) const {
    const size_t stride = static_cast<size_t>(a.K) * Row::kElementBytes;
    float_dot_rows<Row, R>(a.x + m * a.K, static_cast<const uint8_t*>(a.w) + n * stride, stride, a.K, out);
  }
  KESTREL_AVX2 inline float stream(int64_t n) const {
    const size_t stride = static_cast<size_t>(a.K) * Row::kElementBytes;
    return float_dot_stream<Row>(a.x, static_cast<const uint8_t*>(a.w) + n * stride, a.K);
  }
};

struct Q8F32Dot {
  const LinearArgs& a;
  template <int R>
  KESTREL_AVX2 inline void run(int64_t m, int64_t n, float* out) const {
    const int64_t blocks = a.K / kQ8BlockSize;
    const size_t stride = static_cast<size_t>(blocks) * kQ8BlockBytes;
    q8_f32_dot_rows<R>(a.x + m * a.K, static_cast<const uint8_t*>(a.w) + n * stride, stride, blocks, out);
  }
  KESTREL_AVX2 inline float stream(int64_t n) const {
    const int64_t blocks = a.K / kQ8BlockSize;
    return q8_f32_dot_stream(a.x, static_cast<const uint8_t*>(a.w) + n * blocks * kQ8BlockBytes, blocks);
  }
};

// exp(x) for |x| < 87 (Cephes-style: 2^n times a degree-6 polynomial on the reduced argument).
KESTREL_AVX2 inline __m256 exp_ps(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

}  // namespace

// The q8 x q8 rows with the maddubs (plain AVX2) block dot product.
namespace int8_avx2 {
#define KESTREL_INT8_TARGET KESTREL_AVX2
#define KESTREL_INT8_DOT(abs_w, signed_x) \
  _mm256_madd_epi16(_mm256_maddubs_epi16(abs_w, signed_x), _mm256_set1_epi16(1))
#include "backends/cpu/q8_int8.inc"
#undef KESTREL_INT8_DOT
#undef KESTREL_INT8_TARGET
}  // namespace int8_avx2

KESTREL_AVX2 void linear_rows_avx2(const LinearArgs& args, int64_t n0, int64_t n1) {
  switch (args.dtype) {
    case DType::kF32:
      for_row_groups(args, n0, n1, FloatDot<F32Row>{args});
      return;
    case DType::kF16:
      for_row_groups(args, n0, n1, FloatDot<F16Row>{args});
      return;
    case DType::kBF16:
      for_row_groups(args, n0, n1, FloatDot<BF16Row>{args});
      return;
    case DType::kQ8:
      if (args.xq == nullptr) {
        for_row_groups(args, n0, n1, Q8F32Dot{args});
      } else if (args.int8_dot == Int8Dot::kAvxVnni) {
        int8_avxvnni::q8_int8_rows(args, n0, n1);
      } else if (args.int8_dot == Int8Dot::kAvx512Vnni) {
        int8_avx512vnni::q8_int8_rows(args, n0, n1);
      } else {
        int8_avx2::q8_int8_rows(args, n0, n1);
      }
      return;
    default:
      return;  // callers validated the dtype
  }
}

KESTREL_AVX2 bool quantize_rows_q8_avx2(const float* x, int64_t rows, int64_t cols, int8_t* q, float* scales) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 inf = _mm256_set1_ps(INFINITY);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  __m256 bad = _mm256_setzero_ps();
  const int64_t blocks = rows * (cols / kQ8BlockSize);
  for (int64_t b = 0; b < blocks; ++b, x += kQ8BlockSize, q += kQ8BlockSize) {
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + 8 * i);
      const __m256 a = _mm256_andnot_ps(sign, v[i]);
      bad = _mm256_or_ps(bad, _mm256_cmp_ps(a, inf, _CMP_NLT_UQ));  // inf or nan
      amax = _mm256_max_ps(amax, a);
    }
    const float max = hmax(amax);
    scales[b] = max / 127.0f;
    const __m256 inv = _mm256_set1_ps(max > 0.0f ? 127.0f / max : 0.0f);
    __m256i i32[4];
    for (int i = 0; i < 4; ++i)
      i32[i] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[i], inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    const __m256i i16a = _mm256_packs_epi32(i32[0], i32[1]);
    const __m256i i16b = _mm256_packs_epi32(i32[2], i32[3]);
    const __m256i i8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(i16a, i16b), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), i8);
  }
  return _mm256_movemask_ps(bad) == 0;
}

KESTREL_AVX2 float dot_f32_avx2(const float* a, const float* b, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  if (i + 8 <= n) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    i += 8;
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

KESTREL_AVX2 void axpy_f32_avx2(float a, const float* x, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += a * x[i];
}

KESTREL_AVX2 void scale_f32_avx2(float a, float* y, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_mul_ps(va, _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] *= a;
}

KESTREL_AVX2 float sum_squares_avx2(const float* x, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 a = _mm256_loadu_ps(x + i), b = _mm256_loadu_ps(x + i + 8);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    acc1 = _mm256_fmadd_ps(b, b, acc1);
  }
  if (i + 8 <= n) {
    const __m256 a = _mm256_loadu_ps(x + i);
    acc0 = _mm256_fmadd_ps(a, a, acc0);
    i += 8;
  }
  float sum = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += x[i] * x[i];
  return sum;
}

KESTREL_AVX2 void scale_mul_avx2(const float* x, float inv, const float* w, float* y, int64_t n) {
  const __m256 vinv = _mm256_set1_ps(inv);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vinv), _mm256_loadu_ps(w + i)));
  for (; i < n; ++i) y[i] = x[i] * inv * w[i];
}

namespace {

// Four dot products of q with k rows s..s+3 (Dh a multiple of 8 here; the tail is added by the
// caller), returned as one vector of four sums.
KESTREL_AVX2 inline __m128 dot4(const float* q, const float* k, int64_t Dh, int64_t dh8) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
  for (int64_t d = 0; d < dh8; d += 8) {
    const __m256 qv = _mm256_loadu_ps(q + d);
    a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + d), a0);
    a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + Dh + d), a1);
    a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 2 * Dh + d), a2);
    a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(k + 3 * Dh + d), a3);
  }
  // [a0 a1 a2 a3] pairwise: lanes 0..3 of the low and the high half hold partial sums.
  const __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));
  return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

// y[0, 64) = sum_s p[s] * v[s * Dh + (0, 64)], accumulated in registers.
KESTREL_AVX2 inline void weighted_sum64(const float* p, const float* v, int64_t count, int64_t Dh, float* y) {
  __m256 acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_setzero_ps();
  for (int64_t s = 0; s < count; ++s) {
    const __m256 ps = _mm256_broadcast_ss(p + s);
    const float* vs = v + s * Dh;
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[j] = _mm256_fmadd_ps(ps, _mm256_loadu_ps(vs + 8 * j), acc[j]);
  }
  for (int j = 0; j < 8; ++j) _mm256_storeu_ps(y + 8 * j, acc[j]);
}

}  // namespace

KESTREL_AVX2 void attention_row_avx2(const float* q, const float* k, const float* v, int64_t count, int64_t Dh,
                                     float scale, float* scores, float* y) {
  // Scores, four cache rows at a time.
  const int64_t dh8 = Dh / 8 * 8;
  int64_t s = 0;
  for (; s + 4 <= count; s += 4) {
    __m128 dots = dot4(q, k + s * Dh, Dh, dh8);
    if (dh8 < Dh) {
      alignas(16) float tail[4] = {0, 0, 0, 0};
      for (int r = 0; r < 4; ++r)
        for (int64_t d = dh8; d < Dh; ++d) tail[r] += q[d] * k[(s + r) * Dh + d];
      dots = _mm_add_ps(dots, _mm_load_ps(tail));
    }
    _mm_storeu_ps(scores + s, _mm_mul_ps(dots, _mm_set1_ps(scale)));
  }
  for (; s < count; ++s) scores[s] = dot_f32_avx2(q, k + s * Dh, Dh) * scale;
  float max = -INFINITY;
  for (int64_t i = 0; i < count; ++i) max = std::fmax(max, scores[i]);

  // Softmax numerators. Arguments are <= 0; below -87 exp underflows anyway, and clamping
  // there keeps exp_ps in range (max_ps(floor, x) still passes a nan through).
  const __m256 vmax = _mm256_set1_ps(max), floor = _mm256_set1_ps(-87.0f);
  __m256 vsum = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 8 <= count; i += 8) {
    const __m256 e = exp_ps(_mm256_max_ps(floor, _mm256_sub_ps(_mm256_loadu_ps(scores + i), vmax)));
    _mm256_storeu_ps(scores + i, e);
    vsum = _mm256_add_ps(vsum, e);
  }
  float sum = hsum(vsum);
  for (; i < count; ++i) {
    scores[i] = std::exp(scores[i] - max);
    sum += scores[i];
  }

  // Weighted sum of the value rows, 64 columns at a time in registers, then the remainder.
  int64_t d = 0;
  for (; d + 64 <= Dh; d += 64) weighted_sum64(scores, v + d, count, Dh, y + d);
  if (d < Dh) {
    for (int64_t j = d; j < Dh; ++j) y[j] = 0.0f;
    for (int64_t t = 0; t < count; ++t) axpy_f32_avx2(scores[t], v + t * Dh + d, y + d, Dh - d);
  }
  scale_f32_avx2(1.0f / sum, y, Dh);
}

KESTREL_AVX2 void silu_avx2(const float* x, float* y, int64_t n) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 limit = _mm256_set1_ps(80.0f);
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m256 in_range = _mm256_cmp_ps(_mm256_andnot_ps(sign, v), limit, _CMP_LT_OQ);  // false for nan
    if (_mm256_movemask_ps(in_range) == 0xff) {
      const __m256 e = exp_ps(_mm256_xor_ps(v, sign));
      _mm256_storeu_ps(y + i, _mm256_div_ps(v, _mm256_add_ps(one, e)));
    } else {
      for (int64_t j = i; j < i + 8; ++j) y[j] = x[j] / (1.0f + std::exp(-x[j]));
    }
  }
  for (; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

}  // namespace kestrel::cpu::detail

#else  // not x86: best_supported_isa() is kScalar, so none of these is ever called.

namespace kestrel::cpu::detail {
void linear_rows_avx2(const LinearArgs&, int64_t, int64_t) { std::abort(); }
namespace int8_avx2 {
void q8_int8_rows(const LinearArgs&, int64_t, int64_t) { std::abort(); }
}  // namespace int8_avx2
bool quantize_rows_q8_avx2(const float*, int64_t, int64_t, int8_t*, float*) { std::abort(); }
float dot_f32_avx2(const float*, const float*, int64_t) { std::abort(); }
void axpy_f32_avx2(float, const float*, float*, int64_t) { std::abort(); }
void scale_f32_avx2(float, float*, int64_t) { std::abort(); }
float sum_squares_avx2(const float*, int64_t) { std::abort(); }
void scale_mul_avx2(const float*, float, const float*, float*, int64_t) { std::abort(); }
void silu_avx2(const float*, float*, int64_t) { std::abort(); }
void attention_row_avx2(const float*, const float*, const float*, int64_t, int64_t, float, float*, float*) {
  std::abort();
}
}  // namespace kestrel::cpu::detail

#endif
