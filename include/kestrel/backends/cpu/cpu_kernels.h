// The optimized CPU kernel set: the portable kernels with the hot decode ops replaced by
// SIMD (AVX2 + FMA + F16C, chosen at run time; AVX-VNNI or AVX512-VNNI for the q8 int8 dot
// products where present) and multi-threaded versions that keep the contract of docs/ops.md
// (same validation and error messages; results equal to the portable kernels' within float
// rounding, q8 linear within the rounding of its activation quantization).
//
// Replaced ops: linear (f32, f16, bf16 and q8 weights: each thread streams one contiguous
// share of the weight rows with software prefetch, and takes over the tail of a slower
// thread's share; q8 quantizes the activation row to q8 once per call and uses int8 dot
// products, like Q8_0 x Q8_0), attention (f32 caches; one task per head), rms_norm and silu.
// Every other op is the portable kernel. On a CPU without AVX2/FMA/F16C, or when the scalar
// ISA is forced (KESTREL_CPU_ISA=scalar or CpuKernelOptions::isa), the registry is the
// portable kernel set itself. Results do not depend on the thread count.
#pragma once

#include <memory>
#include <optional>
#include <string_view>

#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu {

// Instruction set used by the optimized kernels. The three SIMD sets share every kernel except
// the int8 block dot product of q8 linear.
enum class Isa {
  kScalar,      // the portable kernels (single-threaded)
  kAvx2,        // AVX2 + FMA + F16C
  kAvxVnni,     // the same plus AVX-VNNI (vpdpbusd) for q8 x q8
  kAvx512Vnni,  // the same plus AVX512-VNNI + AVX512VL, still on 256-bit vectors
};

// "scalar", "avx2", "avx_vnni", "avx512_vnni".
std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);  // inverse of isa_name

bool isa_supported(Isa isa);  // by this CPU (kScalar always)
// The best ISA this CPU supports (AVX-VNNI before AVX512-VNNI before AVX2).
Isa best_supported_isa();
// The ISA a registry uses when none is requested: best_supported_isa(), unless the
// environment variable KESTREL_CPU_ISA names one (scalar, avx2, avx_vnni, avx512_vnni, auto);
// a named ISA the CPU lacks is lowered like a requested one, an unknown name is ignored with
// a warning.
Isa default_isa();

struct CpuKernelOptions {
  int threads = 0;         // threads per kernel call, the caller included; 0: hardware_concurrency
  // Unset: default_isa(). An ISA the CPU lacks is lowered: a VNNI set to kAvx2 when that is
  // supported, anything else to kScalar.
  std::optional<Isa> isa;
  // q8 weights: quantize each activation row to q8 once per call and use int8 dot products
  // (like Q8_0 x Q8_0), exact up to that rounding; false: widen the weights to f32 on the fly
  // and keep the activations exact. Activations with a non-finite value always take the f32 way.
  bool q8_quantize_activations = true;
};

// The portable kernels with the hot ops replaced. Registries are cached per setting; each
// thread count has one persistent pool of threads - 1 workers (started by the first parallel
// call; between calls they spin briefly, then sleep). Thread-safe; a registry may be shared by
// several programs. When two threads run kernels of the same pool at once, one of them runs
// its call single-threaded. (Up to 32 distinct thread counts get their own pool; more share
// the pool of the closest count, with a warning.)
std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(int threads = 0);
std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(const CpuKernelOptions& options);

// What a registry made with `options` actually uses (threads resolved, ISA lowered).
struct CpuKernelConfig {
  int threads = 1;  // 1 for the scalar ISA (the portable kernels are single-threaded)
  Isa isa = Isa::kScalar;
  bool q8_quantize_activations = true;
};
CpuKernelConfig resolve_cpu_kernel_options(const CpuKernelOptions& options);

}  // namespace kestrel::cpu
