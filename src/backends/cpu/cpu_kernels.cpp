// The optimized registry: the portable kernels with the hot ops replaced by kernels that get
// their configuration through their prepare step and their thread pool through the call
// context. The scalar ISA is simply the portable set.
#include "kestrel/backends/cpu/cpu_kernels.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "backends/cpu/cpu_ops.h"
#include "kestrel/core/log.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu {

// Units a build left out (CMake's KESTREL_SIMD_UNITS): their tables do not exist.
#ifndef KESTREL_WITHOUT_UNIT_AVX_VNNI
#define KESTREL_WITHOUT_UNIT_AVX_VNNI 0
#endif
#ifndef KESTREL_WITHOUT_UNIT_AVX512
#define KESTREL_WITHOUT_UNIT_AVX512 0
#endif
#ifndef KESTREL_WITHOUT_UNIT_AVX512_BF16
#define KESTREL_WITHOUT_UNIT_AVX512_BF16 0
#endif
#ifndef KESTREL_WITHOUT_UNIT_AVX512_AMX
#define KESTREL_WITHOUT_UNIT_AVX512_AMX 0
#endif

namespace detail {
#if defined(__x86_64__)
namespace avx2 {
const SimdKernels& make_table();
}
namespace avx_vnni {
const SimdKernels& make_table();
}
namespace avx512 {
const SimdKernels& make_table();
}
namespace avx512_bf16 {
const SimdKernels& make_table();
}
namespace avx512_amx {
const SimdKernels& make_table();
}
#endif

const SimdKernels& simd_kernels(Isa isa) {
#if defined(__x86_64__)
  switch (isa) {
#if !KESTREL_WITHOUT_UNIT_AVX_VNNI
    case Isa::kAvxVnni: return avx_vnni::make_table();
#endif
#if !KESTREL_WITHOUT_UNIT_AVX512
    case Isa::kAvx512Vnni: return avx512::make_table();
#endif
#if !KESTREL_WITHOUT_UNIT_AVX512_BF16
    case Isa::kAvx512Bf16: return avx512_bf16::make_table();
#endif
#if !KESTREL_WITHOUT_UNIT_AVX512_AMX
    case Isa::kAvx512Amx: return avx512_amx::make_table();
#endif
    default: return avx2::make_table();  // only units isa_supported accepts reach here
  }
#else
  std::abort();  // no SIMD ISA is ever supported here
#endif
}
}  // namespace detail

namespace {

constexpr int kMaxThreads = 256;
constexpr Isa kAllIsas[] = {Isa::kScalar,     Isa::kAvx2,       Isa::kAvxVnni,
                            Isa::kAvx512Vnni, Isa::kAvx512Bf16, Isa::kAvx512Amx};

using Key = std::tuple<int, Isa, bool, StreamPrefetch, DecodePanels>;

struct Cache {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const runtime::KernelRegistry>> registries;
};

Cache& cache() {
  // Never destroyed: registries' worker threads may outlive static destruction at exit.
  static Cache* instance = new Cache();
  return *instance;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avx_vnni";
    case Isa::kAvx512Vnni: return "avx512_vnni";
    case Isa::kAvx512Bf16: return "avx512_bf16";
    case Isa::kAvx512Amx: return "avx512_amx";
  }
  return "unknown";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : kAllIsas)
    if (name == isa_name(isa)) return isa;
  return std::nullopt;
}

#if defined(__x86_64__)
namespace {
// AMX-TILE, AMX-INT8 and AMX-BF16 in CPUID, and the kernel's permission for this process to
// use the 8 KiB of tile data (Linux grants it on request; without it the first tile
// instruction faults).
bool amx_usable() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) == 0) return false;
  const bool tile = (edx >> 24) & 1u, int8 = (edx >> 25) & 1u, bf16 = (edx >> 22) & 1u;
  if (!tile || !int8 || !bf16) return false;
  constexpr long kReqXcompPerm = 0x1023, kGetXcompPerm = 0x1022, kXfeatureTileData = 18;
  if (syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureTileData) != 0) return false;
  unsigned long permitted = 0;
  return syscall(SYS_arch_prctl, kGetXcompPerm, &permitted) == 0 && ((permitted >> kXfeatureTileData) & 1u) != 0;
}
}  // namespace
#endif

namespace {
// Whether this build compiled the ISA's unit.
constexpr bool unit_compiled(Isa isa) {
  switch (isa) {
    case Isa::kAvxVnni: return !KESTREL_WITHOUT_UNIT_AVX_VNNI;
    case Isa::kAvx512Vnni: return !KESTREL_WITHOUT_UNIT_AVX512;
    case Isa::kAvx512Bf16: return !KESTREL_WITHOUT_UNIT_AVX512_BF16;
    case Isa::kAvx512Amx: return !KESTREL_WITHOUT_UNIT_AVX512_AMX;
    default: return true;
  }
}
}  // namespace

bool isa_supported(Isa isa) {
#if defined(__x86_64__)
  if (!unit_compiled(isa)) return false;
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }();
  static const bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                             __builtin_cpu_supports("avx512vnni");
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvxVnni: return avx2 && __builtin_cpu_supports("avxvnni");
    case Isa::kAvx512Vnni: return avx512;
    case Isa::kAvx512Bf16: return avx512 && __builtin_cpu_supports("avx512bf16");
    case Isa::kAvx512Amx: {
      static const bool amx = avx512 && __builtin_cpu_supports("avx512bf16") && amx_usable();
      return amx;
    }
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

namespace {
// Whether the CPU is AMD's: two run-time choices below are made per vendor.
bool amd_cpu() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_is("amd");
#else
  return false;
#endif
}
}  // namespace

Isa best_supported_isa() {
  // bf16 dot products pay off where vdpbf16ps issues at the FMA rate, doing twice the work
  // (AMD Zen 4). Intel's server cores issue it at half the FMA rate: measured on a Sapphire
  // Rapids class core, 83 against 170 GFLOP/s, and bf16 linears 1.8x slower than widening the
  // weights to f32 (see docs/performance.md). There the widening path is the default and the
  // bf16 set stays available on request, unless the core has AMX: its bf16 tiles take every
  // bf16 call (prompt chunks 3-4x faster than widening, see docs/performance.md).
  const bool bf16_at_fma_rate = amd_cpu();
  if (bf16_at_fma_rate && isa_supported(Isa::kAvx512Bf16)) return Isa::kAvx512Bf16;
  for (Isa isa : {Isa::kAvx512Amx, Isa::kAvx512Vnni, Isa::kAvxVnni, Isa::kAvx2})
    if (isa_supported(isa)) return isa;
  return Isa::kScalar;
}

namespace {
// The AMD display family (0x17 Zen 1-2, 0x19 Zen 3-4, 0x1A Zen 5), 0 on other CPUs.
unsigned amd_family() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!amd_cpu() || __get_cpuid(1, &eax, &ebx, &ecx, &edx) == 0) return 0;
  // The base family, plus the extended family when the base is 0xF.
  const unsigned base = (eax >> 8) & 0xF;
  return base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
#else
  return 0;
#endif
}

// The 256-bit units (AVX2, AVX-VNNI).
bool narrow_unit(Isa isa) { return isa == Isa::kAvx2 || isa == Isa::kAvxVnni; }
}  // namespace

StreamPrefetch default_stream_prefetch(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (narrow_unit(isa)) {
    if (amd_family() == 0x19) return {.f32 = 0, .f16 = 8192, .bf16 = 0, .q8 = 512};
    return {.f32 = 4096, .f16 = 4096, .bf16 = 4096, .q8 = 4096};
  }
  if (__builtin_cpu_is("intel")) return {.f32 = 4096, .f16 = 4096, .bf16 = 4096, .q8 = 8192};
  if (amd_family() >= 0x1A) return {.f32 = 4096};
#endif
  return {};
}

DecodePanels default_decode_panels(Isa isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (narrow_unit(isa)) {
    if (amd_family() == 0x19) return {.f32 = 4, .f16 = 4, .bf16 = 4, .q8 = 4, .apart = true};
    return {.f32 = 2, .f16 = 2, .bf16 = 2, .q8 = 2};
  }
  if (__builtin_cpu_is("intel")) return {.f32 = 1, .f16 = 4, .bf16 = 1, .q8 = 4};
#endif
  return {};
}

namespace {
// A decode panel count the kernels have: 1, 2 or 4 (the one below a count they lack), and at
// least `least`.
int supported_panels(int panels, int least) { return std::max(least, panels >= 4 ? 4 : panels >= 2 ? 2 : 1); }

// The requested ISA, or the best supported one below it.
Isa lower(Isa requested) {
  for (Isa isa = requested; isa != Isa::kScalar; isa = static_cast<Isa>(static_cast<int>(isa) - 1))
    if (isa_supported(isa)) return isa;
  return Isa::kScalar;
}
}  // namespace

Isa default_isa() {
  const char* env = std::getenv("KESTREL_CPU_ISA");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "auto") return best_supported_isa();
  const auto requested = isa_from_name(env);
  if (!requested) {
    log(LogLevel::kWarn,
        "KESTREL_CPU_ISA={} is not one of auto, scalar, avx2, avx_vnni, avx512_vnni, avx512_bf16, avx512_amx; "
        "using {}", env,
        isa_name(best_supported_isa()));
    return best_supported_isa();
  }
  return lower(*requested);
}

CpuKernelConfig resolve_cpu_kernel_options(const CpuKernelOptions& options) {
  CpuKernelConfig config;
  const Isa isa = lower(options.isa.value_or(default_isa()));
  config.isa = isa;
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::thread::hardware_concurrency());
  config.threads = isa == Isa::kScalar ? 1 : std::clamp(threads, 1, kMaxThreads);
  config.q8_quantize_activations = options.q8_quantize_activations;
  if (isa != Isa::kScalar) {
    config.stream_prefetch = options.stream_prefetch.value_or(default_stream_prefetch(isa));
    const DecodePanels panels = options.decode_panels.value_or(default_decode_panels(isa));
    // The AMX bf16 tiles read panels in pairs (amx_bf16.inc).
    const int least_bf16 = isa == Isa::kAvx512Amx ? 2 : 1;
    config.decode_panels = {supported_panels(panels.f32, 1), supported_panels(panels.f16, 2),
                            supported_panels(panels.bf16, least_bf16), supported_panels(panels.q8, 1),
                            panels.apart};
  }
  return config;
}

std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(int threads) {
  CpuKernelOptions options;
  options.threads = threads;
  return optimized_kernel_registry(options);
}

std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(const CpuKernelOptions& options) {
  const CpuKernelConfig config = resolve_cpu_kernel_options(options);
  const Key key{config.threads, config.isa, config.q8_quantize_activations, config.stream_prefetch,
                config.decode_panels};
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (auto it = c.registries.find(key); it != c.registries.end()) return it->second;

  auto registry = std::make_shared<runtime::KernelRegistry>();
  kernels::register_portable_kernels(*registry);
  if (config.isa != Isa::kScalar) {  // the scalar set is the portable kernels
    auto shared = std::make_shared<detail::Config>();
    shared->isa = config.isa;
    shared->q8_quantize_activations = config.q8_quantize_activations;
    shared->stream_prefetch = config.stream_prefetch;
    shared->decode_panels = config.decode_panels;
    shared->simd = &detail::simd_kernels(config.isa);
    const std::shared_ptr<const void> options_ptr = shared;
    registry->add("linear", runtime::Kernel{detail::linear, detail::prepare_linear, options_ptr});
    registry->add("attention", runtime::Kernel{detail::attention, detail::prepare_attention, options_ptr});
    registry->add("rms_norm", runtime::Kernel{detail::rms_norm, detail::prepare_rms_norm, options_ptr});
    registry->add("silu", runtime::Kernel{detail::silu, detail::prepare_config_only, options_ptr});
    registry->add("silu_mul", runtime::Kernel{detail::silu_mul, detail::prepare_config_only, options_ptr});
    registry->add("add", runtime::Kernel{detail::add, detail::prepare_binary, options_ptr});
    registry->add("mul", runtime::Kernel{detail::mul, detail::prepare_binary, options_ptr});
    registry->add("transpose", runtime::Kernel{detail::transpose, detail::prepare_transpose, options_ptr});
    registry->add("rope", runtime::Kernel{detail::rope, detail::prepare_rope, options_ptr});
    registry->add("cast", runtime::Kernel{detail::cast, detail::prepare_config_only, options_ptr});
    registry->add("index_copy", runtime::Kernel{detail::index_copy, detail::prepare_index_copy, options_ptr});
    registry->set_pool(std::make_shared<detail::CpuThreadPool>(config.threads));
  }
  c.registries.emplace(key, registry);
  return registry;
}

}  // namespace kestrel::cpu
