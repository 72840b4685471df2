// The SIMD kernels for AVX2 with AVX-VNNI: 16 lanes in two 256-bit registers, int8 products with vpdpbusd.
#include "backends/cpu/simd/simd_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c,avxvnni"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c,avxvnni")
#endif

namespace kestrel::cpu::detail::avx_vnni {
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 1
#include "backends/cpu/simd/vec256.inc"
#include "backends/cpu/simd/simd_kernels.inc"
#undef KESTREL_AVX_VNNI
#undef KESTREL_BF16_DOT
}  // namespace kestrel::cpu::detail::avx_vnni

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

#endif  // __x86_64__
