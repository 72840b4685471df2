// The heap allocator's promises: zeroed memory at the requested alignment, and buffers of a huge
// page or more starting on a huge page (what lets the kernel back a KV cache with huge pages).
#include "kestrel/runtime/heap_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

namespace kestrel::runtime {
namespace {

bool all_zero(const void* buffer, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(buffer);
  return std::all_of(p, p + bytes, [](uint8_t b) { return b == 0; });
}

TEST(HeapAllocator, SmallBuffersAreZeroedAtTheRequestedAlignment) {
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, kHugePageBytes - 1}) {
    void* buffer = aligned_heap_allocate(bytes, 64);
    ASSERT_NE(buffer, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 64, 0u) << bytes;
    EXPECT_TRUE(all_zero(buffer, bytes)) << bytes;
    aligned_heap_free(buffer);
  }
}

TEST(HeapAllocator, HugePageSizedBuffersStartOnAHugePage) {
  for (size_t bytes : {kHugePageBytes, 3 * kHugePageBytes + 5}) {
    void* buffer = aligned_heap_allocate(bytes, 64);
    ASSERT_NE(buffer, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % kHugePageBytes, 0u) << bytes;
    EXPECT_TRUE(all_zero(buffer, bytes)) << bytes;
    aligned_heap_free(buffer);
  }
}

TEST(HeapAllocator, AllocatorUsesTheSameHeap) {
  HeapAllocator allocator;
  void* buffer = allocator.allocate(kHugePageBytes, TensorInfo{});
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % kHugePageBytes, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % allocator.alignment(), 0u);
  allocator.free(buffer);
}

}  // namespace
}  // namespace kestrel::runtime
