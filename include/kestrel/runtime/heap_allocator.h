// The default allocator: aligned heap memory, nothing to bind.
#pragma once

#include "kestrel/runtime/buffer_allocator.h"

namespace kestrel::runtime {

class HeapAllocator final : public BufferAllocator {
 public:
  std::string_view name() const override { return "heap"; }
  size_t alignment() const override { return 64; }
  void* allocate(size_t bytes, const TensorInfo& info) override;
  Status bind(void*, const std::string&, size_t, bool) override { return ok_status(); }
  void free(void* buffer) override;
};

// Aligned heap allocation shared by the heap allocator and the runner's fallback path: zeroed,
// and from kHugePageBytes up aligned to kHugePageBytes and advised to use huge pages.
inline constexpr size_t kHugePageBytes = size_t{2} << 20;
void* aligned_heap_allocate(size_t bytes, size_t alignment);
void aligned_heap_free(void* buffer);

}  // namespace kestrel::runtime
