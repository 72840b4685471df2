// The AVX-512 kernels plus AMX tiles: int8 tiles for the q8 weights of a prompt chunk
// (amx_q8.inc), bf16 tiles for every call on bf16 weights (amx_bf16.inc, activations rounded to
// bf16 pairs as for vdpbf16ps).
#define KESTREL_ISA_NAMESPACE avx512_amx
#define KESTREL_ISA_TARGET \
  "avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,avx512bf16,avx2,fma,f16c,amx-tile,amx-int8,amx-bf16"
#define KESTREL_VECTOR_FILE "backends/cpu/simd/vec512.inc"
#define KESTREL_BF16_DOT 1
#define KESTREL_AVX_VNNI 0
#define KESTREL_AMX_INT8 1
#define KESTREL_AMX_BF16 1
#include "backends/cpu/simd/isa_unit.inc"
