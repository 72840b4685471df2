#include "kestrel/runtime/heap_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "kestrel/core/error_helpers.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define KESTREL_POISON(at, bytes) ASAN_POISON_MEMORY_REGION(at, bytes)
#define KESTREL_UNPOISON(at, bytes) ASAN_UNPOISON_MEMORY_REGION(at, bytes)
#else
#define KESTREL_POISON(at, bytes) ((void)(at), (void)(bytes))
#define KESTREL_UNPOISON(at, bytes) ((void)(at), (void)(bytes))
#endif

namespace kestrel::runtime {

namespace {
// Half the address space: no request above it can be served, and every rounding below it fits.
constexpr size_t kLargestAllocation = std::numeric_limits<size_t>::max() / 2;
}  // namespace

Result<HugePageRegion> HugePageRegion::map(size_t bytes) {
  HugePageRegion region;
  if (bytes > kLargestAllocation) return make_error(ErrorCode::kCapacity, "cannot map {} bytes of memory", bytes);
  // One huge page more than asked, so that a whole number of them starts on a boundary.
  const size_t pages = (bytes + kHugePageBytes - 1) / kHugePageBytes;
  region.mapping_bytes_ = (pages + 1) * kHugePageBytes;
  void* mapping = ::mmap(nullptr, region.mapping_bytes_, PROT_READ | PROT_WRITE,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED)
    return make_error(ErrorCode::kCapacity, "cannot map {} bytes of memory", region.mapping_bytes_);
  region.mapping_ = mapping;
  const auto start = reinterpret_cast<uintptr_t>(mapping);
  region.base_ = reinterpret_cast<uint8_t*>((start + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes);
  region.capacity_ = pages * kHugePageBytes;
  ::madvise(region.base_, region.capacity_, MADV_HUGEPAGE);  // a hint: failure changes nothing
  return region;
}

HugePageRegion::HugePageRegion(HugePageRegion&& other) noexcept { *this = std::move(other); }

HugePageRegion& HugePageRegion::operator=(HugePageRegion&& other) noexcept {
  if (this != &other) {
    if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapping_bytes_ = std::exchange(other.mapping_bytes_, 0);
    base_ = std::exchange(other.base_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
  }
  return *this;
}

HugePageRegion::~HugePageRegion() {
  if (mapping_ != nullptr) ::munmap(mapping_, mapping_bytes_);
}

namespace {

// Regions of at least kRegionBytes, handed out front to back and never reused in part: every
// buffer is fresh memory, already zero. Under AddressSanitizer everything but the live buffers
// stays poisoned, with a gap after each, so an overrun is still reported.
class BufferPool {
 public:
  static BufferPool& instance() {
    static BufferPool* pool = new BufferPool();  // never destroyed: buffers may outlive statics
    return *pool;
  }

  // `bytes` at most kLargestAllocation (the caller checks), `alignment` at most a huge page.
  void* allocate(size_t bytes, size_t alignment) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (regions_.empty() || !fits(regions_.back(), bytes, alignment)) {
      // A fresh region starts on a huge page, so this buffer fits it from its start.
      auto mapped = HugePageRegion::map(std::max(kRegionBytes, bytes + kRedZone));
      if (!mapped.ok()) return nullptr;
      KESTREL_POISON(mapped->base(), mapped->capacity());
      regions_.emplace_back();
      regions_.back().memory = std::move(*mapped);
    }
    Region& region = regions_.back();
    const size_t start = (region.used + alignment - 1) / alignment * alignment;
    region.used = start + bytes + kRedZone;
    uint8_t* buffer = region.memory.base() + start;
    region.sizes.emplace(buffer, bytes);
    KESTREL_UNPOISON(buffer, bytes);
    return buffer;
  }

  // Whether `buffer` was the pool's (then it is released).
  bool free(void* buffer) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = regions_.begin(); it != regions_.end(); ++it) {
      if (!it->memory.contains(buffer)) continue;
      const auto size = it->sizes.find(buffer);
      if (size == it->sizes.end()) return false;  // not a buffer the pool handed out
      const size_t bytes = size->second;
      it->sizes.erase(size);
      if (it->sizes.empty()) {
        // Unmapped (a later buffer gets a new region), with no poison left on addresses the
        // system may hand out again.
        KESTREL_UNPOISON(it->memory.base(), it->memory.capacity());
        regions_.erase(it);
        return true;
      }
      // The huge pages wholly inside the buffer go back to the system now (its addresses are
      // never handed out again), not when the region's last buffer goes.
      const auto begin = reinterpret_cast<uintptr_t>(buffer), end = begin + bytes;
      const uintptr_t first = (begin + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
      const uintptr_t last = end / kHugePageBytes * kHugePageBytes;
      if (last > first) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
      KESTREL_POISON(buffer, bytes);
      return true;
    }
    return false;
  }

  PooledBufferStats stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    PooledBufferStats stats;
    for (const Region& region : regions_) {
      ++stats.regions;
      stats.live_buffers += region.sizes.size();
      stats.mapped_bytes += region.memory.capacity();
    }
    return stats;
  }

 private:
  // Large enough for the caches of a small model in one region; address space only until
  // written.
  static constexpr size_t kRegionBytes = size_t{64} << 20;
#if defined(__SANITIZE_ADDRESS__)
  static constexpr size_t kRedZone = 64;
#else
  static constexpr size_t kRedZone = 0;
#endif
  struct Region {
    HugePageRegion memory;
    size_t used = 0;
    std::unordered_map<const void*, size_t> sizes;  // of the live buffers
  };
  static bool fits(const Region& region, size_t bytes, size_t alignment) {
    const size_t start = (region.used + alignment - 1) / alignment * alignment;
    return start <= region.memory.capacity() && bytes + kRedZone <= region.memory.capacity() - start;
  }

  std::mutex mutex_;
  std::list<Region> regions_;
};

}  // namespace

void* aligned_heap_allocate(size_t bytes, size_t alignment) {
  if (alignment < alignof(std::max_align_t)) alignment = alignof(std::max_align_t);
  // Nothing near the size of the address space can be served (and rounding it up could wrap):
  // refused here rather than asked of the pool or the C heap.
  if (bytes > kLargestAllocation) return nullptr;
  if (bytes >= kPooledBufferBytes && alignment <= kHugePageBytes) {
    void* buffer = BufferPool::instance().allocate(bytes, alignment);
    if (buffer != nullptr) return buffer;  // fresh memory: zero already
  }
  const size_t rounded = bytes == 0 ? alignment : (bytes + alignment - 1) / alignment * alignment;
  void* buffer = std::aligned_alloc(alignment, rounded);
  if (buffer == nullptr) return nullptr;
  std::memset(buffer, 0, rounded);
  return buffer;
}

void aligned_heap_free(void* buffer) {
  if (buffer == nullptr || BufferPool::instance().free(buffer)) return;
  std::free(buffer);
}

PooledBufferStats pooled_buffer_stats() { return BufferPool::instance().stats(); }

void* HeapAllocator::allocate(size_t bytes, const TensorInfo&) { return aligned_heap_allocate(bytes, alignment()); }

void HeapAllocator::free(void* buffer) { aligned_heap_free(buffer); }

}  // namespace kestrel::runtime
