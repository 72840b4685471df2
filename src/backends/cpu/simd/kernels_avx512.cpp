// The SIMD kernels for AVX-512 (F, BW, DQ, VL, VNNI): 16 lanes in one 512-bit register, int8 products with vpdpbusd.
#include "backends/cpu/simd/simd_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
// GCC 12's AVX-512 headers start some intrinsics from an "undefined" register it then reports
// as maybe-uninitialized.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c")
#endif

namespace kestrel::cpu::detail::avx512 {
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 0
#include "backends/cpu/simd/vec512.inc"
#include "backends/cpu/simd/simd_kernels.inc"
#undef KESTREL_AVX_VNNI
#undef KESTREL_BF16_DOT
}  // namespace kestrel::cpu::detail::avx512

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#pragma GCC diagnostic pop
#endif

#endif  // __x86_64__
