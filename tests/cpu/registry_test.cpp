// The optimized registry: which ops it replaces, caching per setting, option resolution and the
// KESTREL_CPU_ISA override.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <thread>

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu {
namespace {

TEST(CpuRegistry, ReplacesTheHotOpsAndKeepsTheRestPortable) {
  const auto portable = kernels::portable_kernel_registry();
  const auto optimized = optimized_kernel_registry(2);
  CpuKernelOptions two;
  two.threads = 2;
  const bool avx2 = resolve_cpu_kernel_options(two).isa != Isa::kScalar;
  EXPECT_EQ(optimized->names(), portable->names());
  for (const auto& name : portable->names()) {
    SCOPED_TRACE(name);
    const bool replaced = avx2 && (name == "linear" || name == "attention" || name == "rms_norm" || name == "silu" || name == "silu_mul" ||
                                   name == "transpose" || name == "add" || name == "mul" || name == "rope" ||
                                   name == "index_copy" || name == "cast");
    EXPECT_EQ(*optimized->find(name) != *portable->find(name), replaced);
    // Replaced kernels prepare at load (attributes, packed weights, scratch).
    EXPECT_EQ((*optimized->find_kernel(name))->prepare != nullptr, replaced);
  }
}

TEST(CpuRegistry, IsCachedPerSetting) {
  EXPECT_EQ(optimized_kernel_registry(2), optimized_kernel_registry(2));
  CpuKernelOptions three;
  three.threads = 3;
  three.isa = Isa::kAvx2;
  CpuKernelOptions one = three;
  one.threads = 1;
  EXPECT_EQ(optimized_kernel_registry(three), optimized_kernel_registry(three));
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_NE(optimized_kernel_registry(three), optimized_kernel_registry(one));
    // One pool per registry, sized by its thread count.
    ASSERT_NE(optimized_kernel_registry(three)->pool(), nullptr);
    EXPECT_EQ(optimized_kernel_registry(three)->pool()->threads(), 3);
    EXPECT_EQ(optimized_kernel_registry(one)->pool()->threads(), 1);
  } else {
    EXPECT_EQ(optimized_kernel_registry(three)->pool(), nullptr);
  }
}

TEST(CpuRegistry, ResolvesOptions) {
  CpuKernelOptions options;
  options.isa = Isa::kAvx2;
  const int hardware = std::max(1u, std::thread::hardware_concurrency());
  const bool avx2 = isa_supported(Isa::kAvx2);
  EXPECT_EQ(resolve_cpu_kernel_options(options).threads, avx2 ? hardware : 1);
  options.threads = -4;
  EXPECT_EQ(resolve_cpu_kernel_options(options).threads, avx2 ? hardware : 1);
  options.threads = 5;
  EXPECT_EQ(resolve_cpu_kernel_options(options).isa, avx2 ? Isa::kAvx2 : Isa::kScalar);
  EXPECT_EQ(resolve_cpu_kernel_options(options).threads, avx2 ? 5 : 1);
  // An ISA the CPU lacks is lowered.
  // An ISA the CPU lacks is lowered to the best supported one below it.
  const Isa order[] = {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAvx512Bf16, Isa::kAvx512Amx};
  for (size_t i = 1; i < std::size(order); ++i) {
    options.isa = order[i];
    Isa expected = Isa::kScalar;
    for (size_t j = i; j > 0; --j)
      if (isa_supported(order[j])) {
        expected = order[j];
        break;
      }
    EXPECT_EQ(resolve_cpu_kernel_options(options).isa, expected) << isa_name(order[i]);
  }
  // The scalar ISA is the single-threaded portable set.
  options.isa = Isa::kScalar;
  EXPECT_EQ(resolve_cpu_kernel_options(options).threads, 1);
  EXPECT_EQ(resolve_cpu_kernel_options(options).isa, Isa::kScalar);
  options.q8_quantize_activations = false;
  EXPECT_FALSE(resolve_cpu_kernel_options(options).q8_quantize_activations);
}

TEST(CpuRegistry, IsaNames) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAvx512Bf16, Isa::kAvx512Amx})
    EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
  EXPECT_EQ(isa_name(Isa::kAvx512Amx), "avx512_amx");
  EXPECT_EQ(isa_name(Isa::kAvx512Bf16), "avx512_bf16");
  EXPECT_EQ(isa_name(Isa::kAvxVnni), "avx_vnni");
  EXPECT_TRUE(isa_supported(Isa::kScalar));
  EXPECT_TRUE(isa_supported(best_supported_isa()));
  EXPECT_FALSE(isa_from_name("sse9").has_value());
  EXPECT_FALSE(isa_from_name("").has_value());
}

TEST(CpuRegistry, EnvironmentForcesTheScalarFallback) {
  const char* saved = std::getenv("KESTREL_CPU_ISA");
  const std::string previous = saved != nullptr ? saved : "";
  ::setenv("KESTREL_CPU_ISA", "scalar", 1);
  EXPECT_EQ(default_isa(), Isa::kScalar);
  EXPECT_EQ(resolve_cpu_kernel_options({}).isa, Isa::kScalar);
  // An explicit request wins over the environment.
  CpuKernelOptions explicit_avx2;
  explicit_avx2.isa = Isa::kAvx2;
  const Isa avx2_or_scalar = isa_supported(Isa::kAvx2) ? Isa::kAvx2 : Isa::kScalar;
  EXPECT_EQ(resolve_cpu_kernel_options(explicit_avx2).isa, avx2_or_scalar);
  ::setenv("KESTREL_CPU_ISA", "avx2", 1);
  EXPECT_EQ(default_isa(), avx2_or_scalar);
  ::setenv("KESTREL_CPU_ISA", "no-such-isa", 1);
  EXPECT_EQ(default_isa(), best_supported_isa());
  ::setenv("KESTREL_CPU_ISA", "auto", 1);
  EXPECT_EQ(default_isa(), best_supported_isa());
  if (saved != nullptr) {
    ::setenv("KESTREL_CPU_ISA", previous.c_str(), 1);
  } else {
    ::unsetenv("KESTREL_CPU_ISA");
  }
}

TEST(CpuRegistry, ManySettingsCostNoThreadsUntilUsed) {
  // Registries for many settings: their pools start workers only when a kernel is prepared.
  const auto threads_now = [] {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
      (void)entry;
      ++count;
    }
    return count;
  };
  const int before = threads_now();
  for (bool q8_quantize : {true, false}) {
    for (int threads = 1; threads <= 40; ++threads) {
      CpuKernelOptions options;
      options.threads = threads;
      options.isa = Isa::kAvx2;
      options.q8_quantize_activations = q8_quantize;
      const auto registry = optimized_kernel_registry(options);
      ASSERT_NE(registry, nullptr);
      EXPECT_TRUE(registry->find("linear").ok());
    }
  }
  EXPECT_EQ(threads_now(), before);
}

}  // namespace
}  // namespace kestrel::cpu
