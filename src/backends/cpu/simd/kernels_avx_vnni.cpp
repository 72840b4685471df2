// The SIMD kernels for AVX2 with AVX-VNNI: 16 lanes in two 256-bit registers, int8 products with vpdpbusd.
#define KESTREL_ISA_NAMESPACE avx_vnni
#define KESTREL_ISA_TARGET "avx2,fma,f16c,avxvnni"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec256.inc"
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 1
#define KESTREL_AMX_INT8 0
#define KESTREL_AMX_BF16 0
#include "backends/cpu/simd/isa_unit.inc"
