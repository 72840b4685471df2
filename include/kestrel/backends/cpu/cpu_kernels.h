// The optimized CPU kernel set: the portable kernels with the hot ops replaced by SIMD,
// multi-threaded versions that keep the contract of docs/ops.md (same validation and error
// messages; results equal to the portable kernels' within float rounding, q8 linear within the
// rounding of its activation quantization, bf16 linear with bf16 dot products within the
// rounding of the activations to bf16).
//
// Replaced ops: linear (f32, f16, bf16 and q8 weights, repacked once at load into panels of 16
// output rows; blocked matrix multiplies for several activation rows, prefetched streams for
// one), attention (f32 caches; query blocks against the cache, optional sliding window),
// rms_norm, silu and transpose. Every other op is the portable kernel. Every output element is
// computed by the same sequence of operations whatever the number of rows (a prompt chunk or a
// decode step) and the thread count, so a token's logits do not depend on how it was batched.
// On a CPU without AVX2/FMA/F16C, or when the scalar ISA is forced (KESTREL_CPU_ISA=scalar or
// CpuKernelOptions::isa), the registry is the portable kernel set itself.
#pragma once

#include <compare>
#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

#include "kestrel/core/dtype.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu {

// Instruction set used by the optimized kernels. Every SIMD set runs the same kernels over 16
// lanes (one 512-bit or two 256-bit registers) and gives the same bits, except bf16 weights on
// kAvx512Bf16, which use bf16 dot products. kAvx512Amx sums the int8 products of q8 prompt
// chunks in AMX tiles: the same exact integers, so the same bits too.
enum class Isa {
  kScalar,      // the portable kernels (single-threaded)
  kAvx2,        // AVX2 + FMA + F16C; int8 products with maddubs
  kAvxVnni,     // the same plus AVX-VNNI (vpdpbusd on 256-bit vectors)
  kAvx512Vnni,  // AVX-512 F/BW/DQ/VL + VNNI on 512-bit vectors
  kAvx512Bf16,  // the same plus AVX512_BF16 (vdpbf16ps for bf16 weights)
  kAvx512Amx,   // kAvx512Vnni plus AMX int8 tiles for q8 prompt chunks (same bits as kAvx512Vnni)
};

// "scalar", "avx2", "avx_vnni", "avx512_vnni", "avx512_bf16", "avx512_amx".
std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);  // inverse of isa_name

bool isa_supported(Isa isa);  // by this CPU and build (kScalar always)
// The best ISA this CPU supports: the widest vectors, then the most extensions, except that
// kAvx512Bf16 is chosen only where bf16 dot products outrun widening bf16 weights to f32 (AMD
// Zen 4; on Intel cores vdpbf16ps issues at half the FMA rate). With AMX (and the kernel's
// permission to use it) kAvx512Amx.
Isa best_supported_isa();
// The ISA a registry uses when none is requested: best_supported_isa(), unless the
// environment variable KESTREL_CPU_ISA names one (scalar, avx2, avx_vnni, avx512_vnni,
// avx512_bf16, avx512_amx, auto);
// a named ISA the CPU lacks is lowered like a requested one, an unknown name is ignored with
// a warning.
Isa default_isa();

// The member of a per-format setting (fields f32, f16, bf16, q8) for weights of `dtype`, and
// `other` for a format the kernels do not pack.
template <typename Setting, typename T>
T per_weight_format(const Setting& setting, DType dtype, T other) {
  switch (dtype) {
    case DType::kF32: return setting.f32;
    case DType::kF16: return setting.f16;
    case DType::kBF16: return setting.bf16;
    case DType::kQ8: return setting.q8;
    default: return other;
  }
}

// Bytes ahead along each panel stream that the SIMD kernels prefetch the weights of a decode
// step (one activation row), per weight format, 0 for none. A hint: it changes no result.
struct StreamPrefetch {
  size_t f32 = 0, f16 = 0, bf16 = 0, q8 = 0;
  // The distance for weights of `dtype` (0 for a format the kernels do not pack).
  size_t for_dtype(DType dtype) const { return per_weight_format(*this, dtype, size_t{0}); }
  friend auto operator<=>(const StreamPrefetch&, const StreamPrefetch&) = default;
};

// Weight panels a decode step (one activation row) reads in one pass, per weight format: 1, 2
// or 4 (f16 panels are stored in interleaved pairs, so at least 2; bf16 on AMX tiles, which read
// panels in pairs, at least 2 as well). More panels keep more reads from memory in flight; one
// keeps a single stream in order. Changes no result: each output's chain is the same whichever
// panels share its pass.
struct DecodePanels {
  int f32 = 1, f16 = 2, bf16 = 1, q8 = 1;
  // With 4 panels: each of a pass's groups of interleaved panels (4 panels, or 2 f16 pairs) from
  // its own quarter (f16: half) of the thread's range, so every group is the next one of a
  // sequential stream; false: 4 neighbouring panels, each stream jumping 4 panels ahead at the
  // end of every panel. Changes no result either.
  bool apart = false;
  // The count for weights of `dtype` (1 for a format the kernels do not pack).
  int for_dtype(DType dtype) const { return per_weight_format(*this, dtype, 1); }
  friend auto operator<=>(const DecodePanels&, const DecodePanels&) = default;
};

struct CpuKernelOptions {
  int threads = 0;         // threads per kernel call, the caller included; 0: hardware_concurrency
  // Unset: default_isa(). An ISA the CPU lacks is lowered to the best supported one below it
  // (kScalar at the bottom).
  std::optional<Isa> isa;
  // q8 weights: quantize each activation row to q8 once per call and use int8 dot products
  // (like Q8_0 x Q8_0), exact up to that rounding; false: the portable kernel (exact
  // activations, weights widened to f32; slow). Activations with a non-finite value always take
  // the portable kernel.
  bool q8_quantize_activations = true;
  // The decode prefetch distances; unset: default_stream_prefetch(isa).
  std::optional<StreamPrefetch> stream_prefetch;
  // The decode panels read in one pass, and where from; unset: default_decode_panels(isa).
  // A count that is not 1, 2 or 4 is lowered to the one below it (f16, and bf16 with
  // avx512_amx: at least 2).
  std::optional<DecodePanels> decode_panels;
};

// What this CPU's decode streams prefetch with the given unit (docs/performance.md):
//   AVX2 and AVX-VNNI (256-bit units) on AMD Zen 3 (family 0x19): f16 8 KiB, q8 512 bytes,
//     none for f32 and bf16 (with the panels apart, one-thread decode steps alternated step by
//     step: f16 3% faster than with 4 KiB and 11-13% than with none, no faster with 512 bytes
//     or 1 KiB; f32 8-13% slower with 4 or 8 KiB and 2-4% with 512 bytes, bf16 8-9% with
//     2 KiB and 0-5% with 8 KiB; q8, whose AVX2 decode tile is assembly, 4-5% faster with 512
//     bytes than with none (two threads 3-16%), 2-3% with 256 bytes, 0-2% with 768 bytes, but
//     1-3% slower with 4 KiB, up to 4% with 8 KiB and 2-15% with 16 or 32 KiB into L2);
//   256-bit units elsewhere: 4 KiB (measured on Zen 2, two streams side by side);
//   AVX-512 on Intel: f32, f16 and bf16 4 KiB, q8 8 KiB (on a Sapphire Rapids class core
//     one-thread decode ran 10% (f32), 20-26% (f16, bf16) and 30% (q8) faster than with none);
//   AVX-512 on AMD Zen 5 (family 0x1A and later): f32 4 KiB (f32 decode linears took 2-13% less
//     time), none for the others (q8 7-9% slower with 4 KiB, f16 and bf16 unchanged);
//   AVX-512 anywhere else (Zen 4): none; the hardware prefetchers follow the one stream, and
//     2 KiB made q8 decode 18-21% slower and f32 about 3%.
StreamPrefetch default_stream_prefetch(Isa isa);

// How many panels this CPU's decode steps read side by side with the given unit
// (docs/performance.md):
//   256-bit units on AMD Zen 3 (family 0x19): 4, apart (one memory stream read about 10-14
//     GB/s where four read 13-22; one-thread decode 10-30% faster with four side by side than
//     with two, and apart faster again: see gemv in simd_kernels.inc);
//   256-bit units elsewhere: 2 (measured on Zen 2);
//   AVX-512 on Intel: q8 and f16 4, f32 and bf16 1 (on a Sapphire Rapids class core, one-thread
//     decode of the Qwen3-0.6B and Llama-3.2-1B shapes ran 9-14% faster in q8 and 13% in f16,
//     whose weights stream from memory; f32 and bf16 ran 5-7% slower);
//   AVX-512 anywhere else: f16 2 (one interleaved pair), the others 1 (on Zen 4, four panels
//     side by side decoded 20-25% slower).
DecodePanels default_decode_panels(Isa isa);

// The portable kernels with the hot ops replaced. Registries are cached per setting; each
// registry owns a pool of threads - 1 workers (started with the registry; between calls they
// spin briefly, then sleep), which its kernels get through their call context, with scratch
// memory the method reserved at load. Thread-safe; a registry may be shared by several
// programs. When two threads run kernels of the same pool at once, one of them runs its call
// single-threaded.
std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(int threads = 0);
std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(const CpuKernelOptions& options);

// What a registry made with `options` actually uses (threads resolved, ISA lowered).
struct CpuKernelConfig {
  int threads = 1;  // 1 for the scalar ISA (the portable kernels are single-threaded)
  Isa isa = Isa::kScalar;
  bool q8_quantize_activations = true;
  StreamPrefetch stream_prefetch;  // none for the scalar ISA
  DecodePanels decode_panels;      // the defaults of DecodePanels for the scalar ISA
};
CpuKernelConfig resolve_cpu_kernel_options(const CpuKernelOptions& options);

}  // namespace kestrel::cpu
