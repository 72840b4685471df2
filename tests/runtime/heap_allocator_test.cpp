// The heap allocator's promises: zeroed memory at the requested alignment; buffers of
// kPooledBufferBytes or more carved from shared regions advised to use huge pages (what lets
// the kernel back a small model's KV caches with huge pages), released when freed.
#include "kestrel/runtime/heap_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

namespace kestrel::runtime {
namespace {

bool all_zero(const void* buffer, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(buffer);
  return std::all_of(p, p + bytes, [](uint8_t b) { return b == 0; });
}

// The "THPeligible" flag /proc/self/smaps gives the mapping holding `address` (-1: not found).
int thp_eligible(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<uintptr_t>(address);
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t begin = 0, end = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> begin >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
      inside = at >= begin && at < end;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::stoi(line.substr(12));
  }
  return -1;
}

bool transparent_huge_pages_available() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return !text.empty() && text.find("[never]") == std::string::npos;
}

TEST(HeapAllocator, BuffersAreZeroedAtTheRequestedAlignment) {
  for (size_t alignment : {size_t{64}, size_t{4096}}) {
    for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, kPooledBufferBytes - 1, kPooledBufferBytes,
                         size_t{1536} << 10, kHugePageBytes, 3 * kHugePageBytes + 5}) {
      void* buffer = aligned_heap_allocate(bytes, alignment);
      ASSERT_NE(buffer, nullptr) << bytes;
      EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % alignment, 0u) << bytes;
      EXPECT_TRUE(all_zero(buffer, bytes)) << bytes;
      std::memset(buffer, 0xA5, bytes);  // writable to its last byte
      aligned_heap_free(buffer);
    }
  }
}

TEST(HeapAllocator, LargeBuffersShareHugePageRegionsWithoutOverlapping) {
  const PooledBufferStats before = pooled_buffer_stats();
  // 24 caches of 1.5 MiB, as the 110M shape's f16 program has: each below a huge page.
  constexpr size_t kCache = size_t{1536} << 10;
  std::vector<uint8_t*> caches;
  for (int i = 0; i < 24; ++i) {
    auto* cache = static_cast<uint8_t*>(aligned_heap_allocate(kCache, 64));
    ASSERT_NE(cache, nullptr);
    ASSERT_TRUE(all_zero(cache, kCache));
    std::memset(cache, i + 1, kCache);
    caches.push_back(cache);
  }
  const PooledBufferStats during = pooled_buffer_stats();
  EXPECT_EQ(during.live_buffers, before.live_buffers + 24);
  EXPECT_LT(during.regions - before.regions, 24u);  // shared, not one region each
  if (transparent_huge_pages_available()) {
    for (uint8_t* cache : caches) EXPECT_EQ(thp_eligible(cache), 1);
  }
  // Every buffer kept its own bytes: none overlaps another.
  for (int i = 0; i < 24; ++i) {
    EXPECT_EQ(caches[i][0], i + 1);
    EXPECT_EQ(caches[i][kCache - 1], i + 1);
  }
  for (uint8_t* cache : caches) aligned_heap_free(cache);
  const PooledBufferStats after = pooled_buffer_stats();
  EXPECT_EQ(after.live_buffers, before.live_buffers);
  EXPECT_EQ(after.regions, before.regions);  // the regions were unmapped with their last buffer
}

TEST(HeapAllocator, MemoryAfterAFreeIsZeroAgain) {
  for (int round = 0; round < 3; ++round) {
    auto* first = static_cast<uint8_t*>(aligned_heap_allocate(kHugePageBytes + 100, 64));
    auto* second = static_cast<uint8_t*>(aligned_heap_allocate(kPooledBufferBytes, 64));
    ASSERT_NE(first, nullptr);
    ASSERT_NE(second, nullptr);
    EXPECT_TRUE(all_zero(first, kHugePageBytes + 100));
    EXPECT_TRUE(all_zero(second, kPooledBufferBytes));
    std::memset(first, 0xFF, kHugePageBytes + 100);
    std::memset(second, 0xFF, kPooledBufferBytes);
    // Freed in either order; the next round's buffers must not see these bytes.
    if (round % 2 == 0) {
      aligned_heap_free(first);
      aligned_heap_free(second);
    } else {
      aligned_heap_free(second);
      aligned_heap_free(first);
    }
  }
}

TEST(HeapAllocator, RegionsLargerThanTheDefaultServeLargeBuffers) {
  const size_t bytes = size_t{100} << 20;  // above one region's default size
  auto* buffer = static_cast<uint8_t*>(aligned_heap_allocate(bytes, 64));
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(buffer[0], 0);
  EXPECT_EQ(buffer[bytes - 1], 0);
  buffer[bytes - 1] = 1;
  aligned_heap_free(buffer);
}

TEST(HeapAllocator, ImpossibleSizesAreRefusedNotWrapped) {
  const PooledBufferStats before = pooled_buffer_stats();
  for (size_t bytes : {std::numeric_limits<size_t>::max(), std::numeric_limits<size_t>::max() - 100,
                       std::numeric_limits<size_t>::max() / 2 + 1}) {
    EXPECT_EQ(aligned_heap_allocate(bytes, 64), nullptr) << bytes;
    EXPECT_FALSE(HugePageRegion::map(bytes).ok()) << bytes;
  }
  EXPECT_EQ(pooled_buffer_stats().regions, before.regions);
}

TEST(HeapAllocator, FreeOfNullIsANoOp) { aligned_heap_free(nullptr); }

TEST(HeapAllocator, AllocatorUsesTheSameHeap) {
  HeapAllocator allocator;
  const PooledBufferStats before = pooled_buffer_stats();
  void* buffer = allocator.allocate(kHugePageBytes, TensorInfo{});
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % allocator.alignment(), 0u);
  EXPECT_EQ(pooled_buffer_stats().live_buffers, before.live_buffers + 1);
  allocator.free(buffer);
  EXPECT_EQ(pooled_buffer_stats().live_buffers, before.live_buffers);
}

}  // namespace
}  // namespace kestrel::runtime
