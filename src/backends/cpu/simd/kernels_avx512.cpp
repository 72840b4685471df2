// The SIMD kernels for AVX-512 (F, BW, DQ, VL, VNNI): 16 lanes in one 512-bit register, int8 products with vpdpbusd.
#define KESTREL_ISA_NAMESPACE avx512
#define KESTREL_ISA_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx2,fma,f16c"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec512.inc"
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 0
#define KESTREL_AMX_INT8 0
#define KESTREL_AMX_BF16 0
#include "backends/cpu/simd/isa_unit.inc"
