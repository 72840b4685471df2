// read_bandwidth [MiB] [threads] [repeats]: the memory read bandwidth of this machine, the
// bound for a decode step that streams every weight once. Each thread sums its slice of one
// buffer (much larger than the caches by default); the best of the repeats is printed as JSON,
// with a memcpy figure for reference.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

// Eight independent sums so the loop vectorizes and is bound by memory, not by the adds. The
// software prefetch a few KB ahead matters on this kind of machine: the hardware prefetchers
// alone can reach less (the decode kernels prefetch the same way). An AVX2 copy of the loop
// is used where the CPU has AVX2, so the probe is never limited by its own instructions.
#define KESTREL_SUM_WORDS_BODY                                              \
  uint64_t acc[8] = {};                                                     \
  size_t i = 0;                                                             \
  for (; i + 8 <= n; i += 8) {                                              \
    if (prefetch_words > 0) __builtin_prefetch(p + i + prefetch_words);     \
    for (int j = 0; j < 8; ++j) acc[j] += p[i + j];                         \
  }                                                                         \
  for (; i < n; ++i) acc[0] += p[i];                                        \
  return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];

uint64_t sum_words_generic(const uint64_t* p, size_t n, size_t prefetch_words) { KESTREL_SUM_WORDS_BODY }

#if defined(__x86_64__)
__attribute__((target("avx2"))) uint64_t sum_words_avx2(const uint64_t* p, size_t n, size_t prefetch_words) {
  KESTREL_SUM_WORDS_BODY
}
#endif

uint64_t sum_words(const uint64_t* p, size_t n, size_t prefetch_words) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return sum_words_avx2(p, n, prefetch_words);
#endif
  return sum_words_generic(p, n, prefetch_words);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2048;
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : static_cast<int>(std::thread::hardware_concurrency());
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const size_t words = mib * (1u << 20) / sizeof(uint64_t);
  std::vector<uint64_t> buffer(words);
  for (size_t i = 0; i < words; ++i) buffer[i] = i * 0x9e3779b97f4a7c15ull;

  std::atomic<uint64_t> sink{0};
  auto read_pass = [&](size_t prefetch_words) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const size_t slice = words / static_cast<size_t>(threads);
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t begin = slice * static_cast<size_t>(t);
        const size_t n = t + 1 == threads ? words - begin : slice;
        sink.fetch_add(sum_words(buffer.data() + begin, n, prefetch_words), std::memory_order_relaxed);
      });
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, static_cast<double>(words * sizeof(uint64_t)) / s / 1e9);
    }
    return best;
  };
  const double best_read_plain = read_pass(0);
  const double best_read = read_pass(4096 / sizeof(uint64_t));

  std::vector<uint64_t> copy(words / 2);
  double best_copy = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(copy.data(), buffer.data(), copy.size() * sizeof(uint64_t));
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best_copy = std::max(best_copy, static_cast<double>(copy.size() * sizeof(uint64_t)) / s / 1e9);
  }
  fmt::print("{{\"buffer_mib\": {}, \"threads\": {}, \"read_gb_per_s\": {:.2f}, \"read_no_prefetch_gb_per_s\": {:.2f}, "
             "\"memcpy_gb_per_s\": {:.2f}, \"checksum\": {}}}\n",
             mib, threads, best_read, best_read_plain, best_copy, (sink.load() + copy[copy.size() / 2]) % 1000);
  return 0;
}
