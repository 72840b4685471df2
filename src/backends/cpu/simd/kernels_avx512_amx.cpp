// The AVX-512 kernels plus AMX int8 tiles for the q8 weights of a prompt chunk (amx_q8.inc);
// bf16 weights are widened to f32, as on kAvx512Vnni (Intel cores issue vdpbf16ps at half the
// FMA rate).
#define KESTREL_ISA_NAMESPACE avx512_amx
#define KESTREL_ISA_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c,amx-tile,amx-int8"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec512.inc"
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 0
#define KESTREL_AMX_INT8 1
#include "backends/cpu/simd/isa_unit.inc"
