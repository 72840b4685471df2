// The AVX-512 kernels with bf16 weights multiplied by vdpbf16ps (activations rounded to bf16).
#define KESTREL_ISA_NAMESPACE avx512_bf16
#define KESTREL_ISA_TARGET "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec512.inc"
#define KESTREL_BF16_DOT 1
#define KESTREL_AVX_VNNI 0
#define KESTREL_AMX_INT8 0
#define KESTREL_AMX_BF16 0
#include "backends/cpu/simd/isa_unit.inc"
