// q8 x q8 rows with the AVX512-VNNI block dot product on 256-bit vectors (vpdpbusd, EVEX,
// needs AVX512VL), for CPUs that have AVX512-VNNI but not AVX-VNNI. Runs only where the CPU
// reports both (best_supported_isa()).
#include "backends/cpu/avx2.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace kestrel::cpu::detail::int8_avx512vnni {
#define KESTREL_INT8_TARGET __attribute__((target("avx2,fma,f16c,avx512f,avx512vl,avx512vnni")))
#define KESTREL_INT8_DOT(abs_w, signed_x) _mm256_dpbusd_epi32(_mm256_setzero_si256(), abs_w, signed_x)
#include "backends/cpu/q8_int8.inc"
}  // namespace kestrel::cpu::detail::int8_avx512vnni

#else
#include <cstdlib>
namespace kestrel::cpu::detail::int8_avx512vnni {
void q8_int8_rows(const LinearArgs&, int64_t, int64_t) { std::abort(); }
}  // namespace kestrel::cpu::detail::int8_avx512vnni
#endif
