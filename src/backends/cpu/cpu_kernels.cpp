// The optimized registry. A KernelFn is a plain function pointer without user data, so a
// registry's thread count and pool live in a fixed table of slots, and each registry holds the
// wrappers instantiated for its slot (and for its q8 mode). The scalar ISA is simply the
// portable set.
#include "kestrel/backends/cpu/cpu_kernels.h"

#include <algorithm>
#include <array>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "backends/cpu/cpu_ops.h"
#include "kestrel/core/log.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu {

namespace {

using detail::Config;

constexpr int kMaxThreads = 256;
constexpr size_t kSlots = 32;

// A slot is a thread count and its pool, written once under the registry mutex before the
// first registry using it is returned; read-only afterwards.
struct Slot {
  int threads = 1;
  detail::ThreadPool* pool = nullptr;
};
std::array<Slot, kSlots> g_slots;

template <size_t S, Isa I, bool Q8Quantize>
Config slot_config() {
  return Config{g_slots[S].threads, I, Q8Quantize, g_slots[S].pool};
}

template <size_t S, Isa I, bool Q>
Status linear_slot(runtime::KernelContext& ctx) {
  return detail::linear(ctx, slot_config<S, I, Q>());
}
template <size_t S, Isa I, bool Q>
Status attention_slot(runtime::KernelContext& ctx) {
  return detail::attention(ctx, slot_config<S, I, Q>());
}
template <size_t S, Isa I, bool Q>
Status rms_norm_slot(runtime::KernelContext& ctx) {
  return detail::rms_norm(ctx, slot_config<S, I, Q>());
}
template <size_t S, Isa I, bool Q>
Status silu_slot(runtime::KernelContext& ctx) {
  return detail::silu(ctx, slot_config<S, I, Q>());
}

struct SlotKernels {
  runtime::KernelFn linear, attention, rms_norm, silu;
};

template <Isa I, bool Q, size_t... S>
constexpr std::array<SlotKernels, sizeof...(S)> make_slot_kernels(std::index_sequence<S...>) {
  return {SlotKernels{&linear_slot<S, I, Q>, &attention_slot<S, I, Q>, &rms_norm_slot<S, I, Q>,
                      &silu_slot<S, I, Q>}...};
}
template <Isa I>
constexpr std::array<std::array<SlotKernels, kSlots>, 2> make_isa_kernels() {
  return {make_slot_kernels<I, false>(std::make_index_sequence<kSlots>{}),
          make_slot_kernels<I, true>(std::make_index_sequence<kSlots>{})};
}
// [SIMD ISA - 1][q8 quantizes activations][slot]
constexpr std::array<std::array<std::array<SlotKernels, kSlots>, 2>, 3> kSlotKernels = {
    make_isa_kernels<Isa::kAvx2>(), make_isa_kernels<Isa::kAvxVnni>(), make_isa_kernels<Isa::kAvx512Vnni>()};

using Key = std::tuple<int, Isa, bool>;

struct Cache {
  std::mutex mutex;
  std::map<Key, std::shared_ptr<const runtime::KernelRegistry>> registries;
  size_t used_slots = 0;
};

Cache& cache() {
  // Never destroyed: the slots' worker threads may outlive static destruction at exit.
  static Cache* instance = new Cache();
  return *instance;
}

// The slot for a thread count: its own while slots last, then the one of the closest count.
size_t slot_for(Cache& c, int threads) {
  for (size_t s = 0; s < c.used_slots; ++s)
    if (g_slots[s].threads == threads) return s;
  if (c.used_slots < kSlots) {
    const size_t s = c.used_slots++;
    g_slots[s].threads = threads;
    g_slots[s].pool = new detail::ThreadPool(threads);  // lives as long as the process
    return s;
  }
  size_t best = 0;
  for (size_t s = 1; s < c.used_slots; ++s)
    if (std::abs(g_slots[s].threads - threads) < std::abs(g_slots[best].threads - threads)) best = s;
  log(LogLevel::kWarn, "cpu kernels: {} different thread counts are in use; {} threads share the pool of {}",
      kSlots, threads, g_slots[best].threads);
  return best;
}

}  // namespace

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvxVnni: return "avx_vnni";
    case Isa::kAvx512Vnni: return "avx512_vnni";
  }
  return "unknown";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni})
    if (name == isa_name(isa)) return isa;
  return std::nullopt;
}

bool isa_supported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  static const bool avx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  }();
  switch (isa) {
    case Isa::kScalar: return true;
    case Isa::kAvx2: return avx2;
    case Isa::kAvxVnni: return avx2 && __builtin_cpu_supports("avxvnni");
    case Isa::kAvx512Vnni:
      return avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512vnni");
  }
  return false;
#else
  return isa == Isa::kScalar;
#endif
}

Isa best_supported_isa() {
  for (Isa isa : {Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAvx2})
    if (isa_supported(isa)) return isa;
  return Isa::kScalar;
}

namespace {
Isa lower(Isa requested) {
  if (isa_supported(requested)) return requested;
  return requested != Isa::kScalar && isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
}
}  // namespace

Isa default_isa() {
  const char* env = std::getenv("KESTREL_CPU_ISA");
  if (env == nullptr || *env == '\0' || std::string_view(env) == "auto") return best_supported_isa();
  const auto requested = isa_from_name(env);
  if (!requested) {
    log(LogLevel::kWarn, "KESTREL_CPU_ISA={} is not one of auto, scalar, avx2, avx_vnni, avx512_vnni; using {}", env,
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
  return config;
}

std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(int threads) {
  CpuKernelOptions options;
  options.threads = threads;
  return optimized_kernel_registry(options);
}

std::shared_ptr<const runtime::KernelRegistry> optimized_kernel_registry(const CpuKernelOptions& options) {
  const CpuKernelConfig config = resolve_cpu_kernel_options(options);
  const Key key{config.threads, config.isa, config.q8_quantize_activations};
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (auto it = c.registries.find(key); it != c.registries.end()) return it->second;

  auto registry = std::make_shared<runtime::KernelRegistry>();
  kernels::register_portable_kernels(*registry);
  if (config.isa != Isa::kScalar) {  // the scalar set is the portable kernels
    const SlotKernels& slot = kSlotKernels[static_cast<size_t>(config.isa) - 1][config.q8_quantize_activations ? 1 : 0]
                                          [slot_for(c, config.threads)];
    registry->add("linear", slot.linear);
    registry->add("attention", slot.attention);
    registry->add("rms_norm", slot.rms_norm);
    registry->add("silu", slot.silu);
  }
  c.registries.emplace(key, registry);
  return registry;
}

}  // namespace kestrel::cpu
