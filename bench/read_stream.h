// A streaming read of a buffer, the bound of a decode step that reads every weight once: used
// by read_bandwidth (the machine's read bandwidth) and kernels_bench (decode steps against a
// read of the same bytes).
#pragma once

#include <cstddef>
#include <cstdint>

#include <sys/mman.h>

namespace kestrel::bench {

// Eight independent sums so the loop vectorizes and is bound by memory, not by the adds; the
// `streams` parts of the n words are read 8 words (a line) of each in turn. An AVX2 copy of the
// loop is used where the CPU has AVX2, so the probe is never limited by its own instructions.
#define KESTREL_SUM_WORDS_BODY                                              \
  uint64_t acc[8] = {};                                                     \
  const size_t part = n / streams / 8 * 8;                                  \
  for (size_t i = 0; i < part; i += 8)                                      \
    for (size_t s = 0; s < streams; ++s) {                                  \
      const uint64_t* q = p + s * part + i;                                 \
      if (prefetch_words > 0) __builtin_prefetch(q + prefetch_words);       \
      for (int j = 0; j < 8; ++j) acc[j] += q[j];                           \
    }                                                                       \
  for (size_t i = part * streams; i < n; ++i) acc[0] += p[i];               \
  return acc[0] + acc[1] + acc[2] + acc[3] + acc[4] + acc[5] + acc[6] + acc[7];

inline uint64_t sum_words_generic(const uint64_t* p, size_t n, size_t streams, size_t prefetch_words) {
  KESTREL_SUM_WORDS_BODY
}

#if defined(__x86_64__)
__attribute__((target("avx2"))) inline uint64_t sum_words_avx2(const uint64_t* p, size_t n, size_t streams,
                                                               size_t prefetch_words) {
  KESTREL_SUM_WORDS_BODY
}
#endif

#undef KESTREL_SUM_WORDS_BODY

// The sum of the n words at p, read in `streams` streams side by side with a software prefetch
// `prefetch_words` ahead of each (0: the hardware prefetchers only).
inline uint64_t sum_words(const uint64_t* p, size_t n, size_t streams, size_t prefetch_words) {
#if defined(__x86_64__)
  static const bool avx2 = __builtin_cpu_supports("avx2");
  if (avx2) return sum_words_avx2(p, n, streams, prefetch_words);
#endif
  return sum_words_generic(p, n, streams, prefetch_words);
}

// An anonymous mapping of at least `bytes` (whole 2 MiB pages, 2 MiB aligned), optionally with
// huge pages advised, filled so every page is present; words() is null when the mapping failed.
class MappedWords {
 public:
  MappedWords(size_t bytes, bool huge) {
    const size_t huge_page = size_t{1} << 21;
    size_ = (bytes + huge_page - 1) / huge_page * huge_page + huge_page;
    mapping_ = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping_ == MAP_FAILED) {
      mapping_ = nullptr;
      return;
    }
    words_ = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(mapping_) + huge_page - 1) / huge_page * huge_page);
    if (huge) ::madvise(words_, size_ - huge_page, MADV_HUGEPAGE);
    for (size_t i = 0; i < bytes / sizeof(uint64_t); ++i) words_[i] = i * 0x9e3779b97f4a7c15ull;
  }
  ~MappedWords() {
    if (mapping_ != nullptr) ::munmap(mapping_, size_);
  }
  MappedWords(const MappedWords&) = delete;
  MappedWords& operator=(const MappedWords&) = delete;
  uint64_t* words() const { return words_; }

 private:
  void* mapping_ = nullptr;
  size_t size_ = 0;
  uint64_t* words_ = nullptr;
};

}  // namespace kestrel::bench
