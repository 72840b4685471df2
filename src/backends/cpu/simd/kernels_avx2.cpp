// The SIMD kernels for AVX2 + FMA + F16C: 16 lanes in two 256-bit registers, int8 products with maddubs.
#define KESTREL_ISA_NAMESPACE avx2
#define KESTREL_ISA_TARGET "avx2,fma,f16c"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec256.inc"
#define KESTREL_BF16_DOT 0
#define KESTREL_AVX_VNNI 0
#define KESTREL_AMX_INT8 0
#define KESTREL_AMX_BF16 0
#include "backends/cpu/simd/isa_unit.inc"
