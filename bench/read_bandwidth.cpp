// read_bandwidth [MiB] [threads] [repeats]: the memory read bandwidth of this machine, the
// bound for a decode step that streams every weight once. Each thread sums its slice of one
// buffer (much larger than the caches by default) in one stream or in four side by side (the
// slice's quarters, 64 bytes of each in turn: some cores read several streams well over what
// one stream gets), with a few software prefetch distances; the best pass is printed as JSON.
// The reads run over a buffer asked for transparent huge pages (madvise: on a virtual machine
// the page walks of 4 KiB pages often cost a large share of the bandwidth, and a mapped program
// file in the page cache gets large folios) and over one of 4 KiB pages; read_gb_per_s is the
// best of all, and each page size's best and a memcpy are printed beside it.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <thread>
#include <vector>

#include "read_stream.h"

using kestrel::bench::MappedWords;
using kestrel::bench::sum_words;

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 2048;
  const int threads = argc > 2 ? std::max(1, std::atoi(argv[2])) : static_cast<int>(std::thread::hardware_concurrency());
  const int repeats = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const size_t bytes = std::max<size_t>(mib, 1) * (size_t{1} << 20);
  const size_t words = bytes / sizeof(uint64_t);

  std::atomic<uint64_t> sink{0};
  auto read_pass = [&](const uint64_t* buffer, size_t streams, size_t prefetch_words) {
    double best = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      const size_t slice = words / static_cast<size_t>(threads);
      for (int t = 0; t < threads; ++t)
        pool.emplace_back([&, t] {
          const size_t begin = slice * static_cast<size_t>(t);
          const size_t n = t + 1 == threads ? words - begin : slice;
          sink.fetch_add(sum_words(buffer + begin, n, streams, prefetch_words), std::memory_order_relaxed);
        });
      for (auto& th : pool) th.join();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      best = std::max(best, static_cast<double>(bytes) / s / 1e9);
    }
    return best;
  };

  const MappedWords huge_mapping(bytes, true), small_mapping(bytes, false);
  uint64_t* huge = huge_mapping.words();
  uint64_t* small = small_mapping.words();
  if (huge == nullptr || small == nullptr) {
    fmt::print(stderr, "read_bandwidth: cannot map {} MiB\n", mib);
    return 1;
  }
  // The best over one or four streams and a few prefetch distances (0: hardware prefetchers
  // only), on huge pages and on 4 KiB pages: the figure is an estimate of what a streaming
  // reader can get, so no single loop setting decides it (on some virtual machines the 4 KiB
  // pages read faster).
  struct Best {
    double gbps = 0;
    size_t streams = 1, distance = 0;
  };
  auto best_over_settings = [&](const uint64_t* buffer) {
    Best best;
    for (size_t streams : {1, 4})
      for (size_t distance : {0, 1024, 2048, 4096, 8192}) {
        const double gbps = read_pass(buffer, streams, distance / sizeof(uint64_t));
        if (gbps > best.gbps) best = {gbps, streams, distance};
      }
    return best;
  };
  const Best huge_pages = best_over_settings(huge), small_pages = best_over_settings(small);
  const Best& best = huge_pages.gbps >= small_pages.gbps ? huge_pages : small_pages;

  double best_copy = 0;
  const size_t half = bytes / 2;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    std::memcpy(small, huge, half);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    best_copy = std::max(best_copy, static_cast<double>(half) / s / 1e9);
  }
  fmt::print("{{\"buffer_mib\": {}, \"threads\": {}, \"read_gb_per_s\": {:.2f}, \"pages\": \"{}\", \"streams\": {}, "
             "\"prefetch_bytes\": {}, \"read_huge_pages_gb_per_s\": {:.2f}, \"read_4k_pages_gb_per_s\": {:.2f}, "
             "\"memcpy_gb_per_s\": {:.2f}, \"checksum\": {}}}\n",
             mib, threads, best.gbps, &best == &huge_pages ? "huge" : "4k", best.streams, best.distance,
             huge_pages.gbps, small_pages.gbps, best_copy, (sink.load() + small[words / 3]) % 1000);
  return 0;
}
