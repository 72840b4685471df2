#include "kestrel/runtime/heap_allocator.h"

#include <cstdlib>
#include <cstring>

namespace kestrel::runtime {

void* aligned_heap_allocate(size_t bytes, size_t alignment) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  void* buffer = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
  if (buffer != nullptr) std::memset(buffer, 0, rounded == 0 ? alignment : rounded);
  return buffer;
}

void aligned_heap_free(void* buffer) { std::free(buffer); }

void* HeapAllocator::allocate(size_t bytes, const TensorInfo&) { return aligned_heap_allocate(bytes, alignment()); }

void HeapAllocator::free(void* buffer) { aligned_heap_free(buffer); }

}  // namespace kestrel::runtime
