// The default allocator: aligned heap memory, nothing to bind.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kestrel/core/result.h"
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

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// Anonymous memory starting on a huge page, a whole number of them long, advised to use huge
// pages (a hint: where the kernel gives none, it is ordinary memory). Nothing is committed
// until written; it reads as zero until then.
class HugePageRegion {
 public:
  static Result<HugePageRegion> map(size_t bytes);
  HugePageRegion() = default;
  HugePageRegion(HugePageRegion&& other) noexcept;
  HugePageRegion& operator=(HugePageRegion&& other) noexcept;
  HugePageRegion(const HugePageRegion&) = delete;
  HugePageRegion& operator=(const HugePageRegion&) = delete;
  ~HugePageRegion();

  uint8_t* base() const { return base_; }
  size_t capacity() const { return capacity_; }
  bool contains(const void* p) const {
    const auto* at = static_cast<const uint8_t*>(p);
    return base_ != nullptr && at >= base_ && at < base_ + capacity_;
  }

 private:
  void* mapping_ = nullptr;
  size_t mapping_bytes_ = 0;
  uint8_t* base_ = nullptr;
  size_t capacity_ = 0;
};

// Aligned, zeroed heap allocation shared by the heap allocator and the runner's fallback path.
// Buffers of kPooledBufferBytes or more (KV caches, logits) are carved one after another from
// shared huge-page regions, so that caches smaller than a huge page get huge pages too: a decode
// step reads every head's cache rows as short streams and writes one row per head, and on
// 4 KiB pages nearly each of those costs a TLB miss (the 110M shape's 1.5 MiB caches: q8 decode
// attention took 52-54 ms per 128 steps on small pages and 33-34 ms on huge ones, and the
// cache writes 25 ms against 6). A region is unmapped when its last buffer is freed; smaller
// buffers come from the C heap.
inline constexpr size_t kPooledBufferBytes = size_t{64} << 10;
void* aligned_heap_allocate(size_t bytes, size_t alignment);
void aligned_heap_free(void* buffer);

// The pool's state, for tests: regions mapped and buffers live in them.
struct PooledBufferStats {
  size_t regions = 0, live_buffers = 0, mapped_bytes = 0;
};
PooledBufferStats pooled_buffer_stats();

}  // namespace kestrel::runtime
