// compute_peak [threads] [milliseconds]: the arithmetic peak of this machine, the ceiling for a
// compute-bound prefill. Each thread runs long chains of independent multiply-adds that never
// touch memory: f32 FMA on 512-bit and 256-bit vectors, int8 dot products (vpdpbusd, 4 MACs
// per 32-bit lane) and bf16 pair dot products (vdpbf16ps, 2 MACs per lane), each only where
// the CPU has the extension. Prints one JSON object: GFLOP/s (2 flops per multiply-add) or
// GOP/s per kind, the best of five timed passes, with all threads together. Each thread's time
// is its own CPU time (CLOCK_THREAD_CPUTIME_ID), so a neighbour's process sharing the core
// does not lower the figure; "wall" variants are printed too.
//
// The chains are 24 accumulators deep, enough to cover the latency of every unit measured on
// x86 so far (4-5 cycles, two ports).
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

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace {

using Clock = std::chrono::steady_clock;

#if defined(__x86_64__)
// Each kernel performs `iterations` rounds of 24 vector multiply-adds and returns a value that
// depends on all of them, so nothing is optimized away. The returned count is multiply-adds.
#define KESTREL_PEAK_BODY(VEC, SETZERO, SET1, OP, STORE_SUM)           \
  VEC acc[24];                                                          \
  for (int i = 0; i < 24; ++i) acc[i] = SETZERO;                        \
  const VEC a = SET1(seed), b = SET1(seed * 0.5f + 1.0f);              \
  for (int64_t it = 0; it < iterations; ++it) {                         \
    _Pragma("GCC unroll 24") for (int i = 0; i < 24; ++i) acc[i] = OP; \
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3])); \
  }                                                                     \
  for (int i = 1; i < 24; ++i) acc[0] = STORE_SUM;                      \
  float out[64];                                                        \
  std::memcpy(out, &acc[0], sizeof(acc[0]));                            \
  return out[0];

__attribute__((target("avx512f"))) float fma512(int64_t iterations, float seed) {
  KESTREL_PEAK_BODY(__m512, _mm512_setzero_ps(), _mm512_set1_ps, _mm512_fmadd_ps(a, b, acc[i]),
                    _mm512_add_ps(acc[0], acc[i]))
}
__attribute__((target("avx2,fma"))) float fma256(int64_t iterations, float seed) {
  KESTREL_PEAK_BODY(__m256, _mm256_setzero_ps(), _mm256_set1_ps, _mm256_fmadd_ps(a, b, acc[i]),
                    _mm256_add_ps(acc[0], acc[i]))
}
__attribute__((target("avx512f,avx512bw,avx512vnni"))) float dpbusd512(int64_t iterations, float seed) {
  const __m512i ua = _mm512_set1_epi8(static_cast<char>(static_cast<int>(seed) | 1));
  const __m512i sb = _mm512_set1_epi8(3);
  __m512i acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_setzero_si512();
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbusd_epi32(acc[i], ua, sb);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  for (int i = 1; i < 24; ++i) acc[0] = _mm512_add_epi32(acc[0], acc[i]);
  return static_cast<float>(_mm512_reduce_add_epi32(acc[0]));
}
__attribute__((target("avx2,avxvnni"))) float dpbusd256(int64_t iterations, float seed) {
  const __m256i ua = _mm256_set1_epi8(static_cast<char>(static_cast<int>(seed) | 1));
  const __m256i sb = _mm256_set1_epi8(3);
  __m256i acc[12];
  for (int i = 0; i < 12; ++i) acc[i] = _mm256_setzero_si256();
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
    for (int i = 0; i < 12; ++i) acc[i] = _mm256_dpbusd_avx_epi32(acc[i], ua, sb);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  for (int i = 1; i < 12; ++i) acc[0] = _mm256_add_epi32(acc[0], acc[i]);
  return static_cast<float>(_mm256_extract_epi32(acc[0], 0));
}
__attribute__((target("avx512f,avx512bf16"))) float dpbf16_512(int64_t iterations, float seed) {
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(seed), _mm512_set1_ps(seed));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(0.5f), _mm512_set1_ps(0.25f));
  __m512 acc[24];
  for (int i = 0; i < 24; ++i) acc[i] = _mm512_setzero_ps();
  for (int64_t it = 0; it < iterations; ++it) {
#pragma GCC unroll 24
    for (int i = 0; i < 24; ++i) acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
    __asm__ volatile("" : "+v"(acc[0]), "+v"(acc[1]), "+v"(acc[2]), "+v"(acc[3]));
  }
  for (int i = 1; i < 24; ++i) acc[0] = _mm512_add_ps(acc[0], acc[i]);
  return _mm512_reduce_add_ps(acc[0]);
}
#endif

struct Kind {
  const char* name;
  float (*fn)(int64_t, float);
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
    volatile float sink = kind.fn(iterations, 1.0f);
    (void)sink;
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
        volatile float sink = kind.fn(iterations, 1.0f + static_cast<float>(t));
        (void)sink;
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
  kinds = {
      {"f32_fma_512", fma512, 24 * 16, avx512},
      {"f32_fma_256", fma256, 24 * 8, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")},
      {"int8_dpbusd_512", dpbusd512, 24 * 64,
       avx512 && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")},
      {"int8_dpbusd_256", dpbusd256, 12 * 32, __builtin_cpu_supports("avxvnni")},
      {"bf16_dpbf16_512", dpbf16_512, 24 * 32, avx512 && __builtin_cpu_supports("avx512bf16")},
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
