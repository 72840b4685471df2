// compute_peak [threads] [milliseconds]: the arithmetic peak of this machine, the ceiling for a
// compute-bound prefill. Each thread runs long chains of independent multiply-adds that never
// touch memory: f32 FMA on 512-bit and 256-bit vectors, int8 dot products (vpdpbusd, 4 MACs
// per 32-bit lane) and bf16 pair dot products (vdpbf16ps, 2 MACs per lane), each only where
// the CPU has the extension, and AMX int8 tile products (tdpbssd, where the CPU and the kernel
// allow AMX). Prints one JSON object: GFLOP/s (2 flops per multiply-add) or
// GOP/s per kind, the best of five timed passes, with all threads together. Each thread's time
// is its own CPU time (CLOCK_THREAD_CPUTIME_ID), so a neighbour's process sharing the core
// does not lower the figure; "wall" variants are printed too.
//
// The chains are 24 accumulators deep on 512-bit vectors and 12 on 256-bit ones, enough to cover
// the latency of every unit measured on x86 so far (4-5 cycles, two ports).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <ctime>
#include <vector>

#include "kestrel/backends/cpu/cpu_kernels.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__x86_64__)
// Each kernel runs `iterations` rounds of independent multiply-adds on accumulators that live in
// registers for the whole loop (inline assembly: a compiler keeping them in memory would measure
// its stores), 24 per round on 512-bit vectors, 12 on 256-bit ones (AVX2 has 16 registers).
#define KESTREL_REPEAT24(INSN)                                                                          \
  INSN(4) INSN(5) INSN(6) INSN(7) INSN(8) INSN(9) INSN(10) INSN(11) INSN(12) INSN(13) INSN(14) INSN(15) \
  INSN(16) INSN(17) INSN(18) INSN(19) INSN(20) INSN(21) INSN(22) INSN(23) INSN(24) INSN(25) INSN(26) INSN(27)
#define KESTREL_REPEAT12(INSN) \
  INSN(4) INSN(5) INSN(6) INSN(7) INSN(8) INSN(9) INSN(10) INSN(11) INSN(12) INSN(13) INSN(14) INSN(15)
#define KESTREL_ZMM_CLOBBERS                                                                                \
  "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", \
      "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24", "xmm25", "xmm26", "xmm27"
#define KESTREL_YMM_CLOBBERS \
  "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// Accumulators start at zero: whatever an earlier computation left in a register could be a
// denormal, whose microcode assists would make the loop many times slower.
#define KESTREL_ZERO_ZMM(n) "vpxord %%zmm" #n ", %%zmm" #n ", %%zmm" #n "\n\t"
#define KESTREL_ZERO_YMM(n) "vpxor %%ymm" #n ", %%ymm" #n ", %%ymm" #n "\n\t"
#define KESTREL_FMA_ZMM(n) "vfmadd231ps %[a], %[b], %%zmm" #n "\n\t"
#define KESTREL_FMA_YMM(n) "vfmadd231ps %[a], %[b], %%ymm" #n "\n\t"
#define KESTREL_DPBUSD_ZMM(n) "vpdpbusd %[a], %[b], %%zmm" #n "\n\t"
#define KESTREL_DPBUSD_YMM(n) "%{vex%} vpdpbusd %[a], %[b], %%ymm" #n "\n\t"
#define KESTREL_DPBF16_ZMM(n) "vdpbf16ps %[a], %[b], %%zmm" #n "\n\t"

// One peak kernel: `iterations` rounds of REPEAT(INSN) on accumulators zeroed first. The
// operands a and b are constant vectors (values do not change the throughput).
#define KESTREL_PEAK_KERNEL(NAME, TARGET, REPEAT, ZERO, INSN, VEC, SET1, CONSTRAINT, CLOBBERS)             \
  __attribute__((target(TARGET))) void NAME(int64_t iterations) {                                         \
    const VEC a = SET1, b = SET1;                                                                        \
    __asm__ volatile(REPEAT(ZERO) "1:\n\t" REPEAT(INSN) "dec %[n]\n\tjnz 1b"                            \
                     : [n] "+r"(iterations)                                                              \
                     : [a] CONSTRAINT(a), [b] CONSTRAINT(b)                                              \
                     : CLOBBERS, "cc");                                                                  \
  }

KESTREL_PEAK_KERNEL(fma512, "avx512f", KESTREL_REPEAT24, KESTREL_ZERO_ZMM, KESTREL_FMA_ZMM, __m512,
                    _mm512_set1_ps(0.5f), "v", KESTREL_ZMM_CLOBBERS)
KESTREL_PEAK_KERNEL(fma256, "avx2,fma", KESTREL_REPEAT12, KESTREL_ZERO_YMM, KESTREL_FMA_YMM, __m256,
                    _mm256_set1_ps(0.5f), "x", KESTREL_YMM_CLOBBERS)
KESTREL_PEAK_KERNEL(dpbusd512, "avx512f,avx512bw,avx512vnni", KESTREL_REPEAT24, KESTREL_ZERO_ZMM, KESTREL_DPBUSD_ZMM,
                    __m512i, _mm512_set1_epi8(3), "v", KESTREL_ZMM_CLOBBERS)
KESTREL_PEAK_KERNEL(dpbusd256, "avx2,avxvnni", KESTREL_REPEAT12, KESTREL_ZERO_YMM, KESTREL_DPBUSD_YMM, __m256i,
                    _mm256_set1_epi8(3), "x", KESTREL_YMM_CLOBBERS)
KESTREL_PEAK_KERNEL(dpbf16_512, "avx512f,avx512bf16", KESTREL_REPEAT24, KESTREL_ZERO_ZMM, KESTREL_DPBF16_ZMM, __m512,
                    _mm512_set1_ps(0.5f), "v", KESTREL_ZMM_CLOBBERS)

// AMX int8: four independent 16 x 16 sum tiles per round (tiles are not renamed, so one tile
// would measure the product's latency), from two A and two B tiles of `k` bytes per row (64:
// the largest tile; 32: one q8 block, the shape of the q8 prompt kernel).
struct alignas(64) AmxConfig {
  uint8_t palette, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
template <int K>
__attribute__((target("amx-tile,amx-int8"))) void amx_int8(int64_t iterations) {
  static constexpr AmxConfig config = {
      1, 0, {}, {64, 64, 64, 64, K, K, 64, 64}, {16, 16, 16, 16, 16, 16, K / 4, K / 4}};
  alignas(64) static const int8_t operand[16 * 64] = {3};
  _tile_loadconfig(&config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbssd(0, 4, 6);
    _tile_dpbssd(1, 4, 7);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
  }
  _tile_release();
}
#endif

struct Kind {
  const char* name;
  void (*fn)(int64_t);
  int64_t macs_per_iteration;  // per thread and iteration
  bool available;
};

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Rates {
  double cpu = 0, wall = 0;  // multiply-adds per second
};

// Runs `fn` on `threads` threads for about `ms` milliseconds; returns multiply-adds per second
// by each thread's CPU time and by wall time (slowest thread).
Rates measure(const Kind& kind, int threads, int ms) {
  // Calibrate the iteration count on one thread to about `ms`.
  int64_t iterations = 1 << 16;
  for (;;) {
    const auto start = Clock::now();
    kind.fn(iterations);
    const double s = std::chrono::duration<double>(Clock::now() - start).count();
    if (s > ms / 4000.0) {
      iterations = static_cast<int64_t>(iterations * (ms / 1000.0) / s);
      break;
    }
    iterations *= 2;
  }
  Rates best;
  for (int pass = 0; pass < 5; ++pass) {
    std::atomic<int> ready{0};
    std::atomic<bool> go{false};
    std::vector<double> seconds(static_cast<size_t>(threads)), cpu(static_cast<size_t>(threads));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        ready.fetch_add(1);
        while (!go.load()) {
        }
        const auto start = Clock::now();
        const double cpu_start = thread_cpu_seconds();
        kind.fn(iterations);
        cpu[static_cast<size_t>(t)] = thread_cpu_seconds() - cpu_start;
        seconds[static_cast<size_t>(t)] = std::chrono::duration<double>(Clock::now() - start).count();
      });
    while (ready.load() < threads) {
    }
    go.store(true);
    for (auto& thread : pool) thread.join();
    const double slowest = *std::max_element(seconds.begin(), seconds.end());
    const double work = static_cast<double>(iterations) * kind.macs_per_iteration;
    double cpu_rate = 0;
    for (double c : cpu) cpu_rate += work / c;
    best.cpu = std::max(best.cpu, cpu_rate);
    best.wall = std::max(best.wall, work * threads / slowest);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int threads = argc > 1 ? std::max(1, std::atoi(argv[1])) : 1;
  const int ms = argc > 2 ? std::max(10, std::atoi(argv[2])) : 300;
  std::vector<Kind> kinds;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  // The kernels' own check: AMX in CPUID, and the tile-data permission granted to this process.
  const bool amx_usable = kestrel::cpu::isa_supported(kestrel::cpu::Isa::kAvx512Amx);
  kinds = {
      {"f32_fma_512", fma512, 24 * 16, avx512},
      {"f32_fma_256", fma256, 12 * 8, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
      {"int8_dpbusd_512", dpbusd512, 24 * 64,
       avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")},
      {"int8_dpbusd_256", dpbusd256, 12 * 32, __builtin_cpu_supports("avxvnni") != 0},
      {"bf16_dpbf16_512", dpbf16_512, 24 * 32, avx512 && __builtin_cpu_supports("avx512bf16")},
      {"int8_amx_k64", amx_int8<64>, 4 * 16 * 16 * 64, amx_usable},
      {"int8_amx_k32", amx_int8<32>, 4 * 16 * 16 * 32, amx_usable},
  };
#endif
  std::string json = fmt::format("{{\"threads\": {}", threads);
  for (const Kind& kind : kinds) {
    if (!kind.available) continue;
    const Rates rates = measure(kind, threads, ms);
    // Flops for float kinds (two per multiply-add), operations (multiply-adds) for int8.
    const bool is_int = std::string(kind.name).starts_with("int8");
    const double scale = (is_int ? 1.0 : 2.0) / 1e9;
    json += fmt::format(", \"{0}_{1}\": {2:.1f}, \"{0}_{1}_wall\": {3:.1f}", kind.name, is_int ? "gmacs" : "gflops",
                        rates.cpu * scale, rates.wall * scale);
  }
  fmt::print("{}}}\n", json);
  return 0;
}
