#include "cpu/counting_allocator.h"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

std::atomic<int> g_scopes{0};
std::atomic<int64_t> g_allocations{0};

void* allocate(std::size_t bytes, std::size_t alignment) {
  if (g_scopes.load(std::memory_order_relaxed) > 0) g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else {
    bytes = (bytes + alignment - 1) / alignment * alignment;
    p = std::aligned_alloc(alignment, bytes);
  }
  return p;
}

}  // namespace

void* operator new(std::size_t n) {
  if (void* p = allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  if (void* p = allocate(n, 0)) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, std::align_val_t a) {
  if (void* p = allocate(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n, std::align_val_t a) {
  if (void* p = allocate(n, static_cast<std::size_t>(a))) return p;
  throw std::bad_alloc();
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
// These replace the global operators, so memory from operator new reaches free() here by design;
// GCC cannot tell a replacement from a mismatched pair.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop

namespace kestrel::cpu::testing {

namespace {
int64_t g_start = 0;
}

CountAllocations::CountAllocations() {
  g_start = g_allocations.load();
  g_scopes.fetch_add(1);
}
CountAllocations::~CountAllocations() { g_scopes.fetch_sub(1); }
int64_t CountAllocations::count() const { return g_allocations.load() - g_start; }

}  // namespace kestrel::cpu::testing
