// q8 x q8 rows with the AVX-VNNI block dot product (vpdpbusd, VEX-encoded, 256-bit): one
// instruction for the u8 x s8 multiply and the two pairwise sums. Runs only where the CPU
// reports avxvnni (best_supported_isa()).
#include "backends/cpu/avx2.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

namespace kestrel::cpu::detail::int8_avxvnni {
#define KESTREL_INT8_TARGET __attribute__((target("avx2,fma,f16c,avxvnni")))
#define KESTREL_INT8_DOT(abs_w, signed_x) _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), abs_w, signed_x)
#include "backends/cpu/q8_int8.inc"
}  // namespace kestrel::cpu::detail::int8_avxvnni

#else
#include <cstdlib>
namespace kestrel::cpu::detail::int8_avxvnni {
void q8_int8_rows(const LinearArgs&, int64_t, int64_t) { std::abort(); }
}  // namespace kestrel::cpu::detail::int8_avxvnni
#endif
