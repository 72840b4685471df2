#include "kestrel/runtime/heap_allocator.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>

namespace kestrel::runtime {

void* aligned_heap_allocate(size_t bytes, size_t alignment) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  // A buffer of a huge page or more (KV caches) starts on a huge page and asks for huge pages:
  // a decode step reads each head's cache rows as short streams, and on 4 KiB pages every few
  // rows cost a TLB miss (on Zen 4, q8 decode attention took 85 ms per 128 steps on small
  // pages and 58-65 ms on huge ones).
  const bool huge = bytes >= kHugePageBytes;
  if (huge && alignment < kHugePageBytes) alignment = kHugePageBytes;
  const size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void* buffer = std::aligned_alloc(alignment, rounded);
  if (buffer == nullptr) return nullptr;
  if (huge) ::madvise(buffer, rounded, MADV_HUGEPAGE);  // advice: failure changes nothing
  std::memset(buffer, 0, rounded);
  return buffer;
}

void aligned_heap_free(void* buffer) { std::free(buffer); }

void* HeapAllocator::allocate(size_t bytes, const TensorInfo&) { return aligned_heap_allocate(bytes, alignment()); }

void HeapAllocator::free(void* buffer) { aligned_heap_free(buffer); }

}  // namespace kestrel::runtime
