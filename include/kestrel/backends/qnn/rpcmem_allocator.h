// Zero-copy I/O buffers for QNN HTP: shared memory from libcdsprpc's rpcmem, which the DSP maps
// through a file descriptor. The library is opened at run time; when it (or a symbol) is
// missing or an allocation fails, allocate() returns null and the runner uses the heap.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "kestrel/backends/qnn/mem_registrar.h"
#include "kestrel/runtime/buffer_allocator.h"

namespace kestrel::qnn {

inline constexpr int kRpcmemHeapIdSystem = 25;     // RPCMEM_HEAP_ID_SYSTEM
inline constexpr uint32_t kRpcmemDefaultFlags = 1;  // RPCMEM_DEFAULT_FLAGS
inline constexpr size_t kRpcmemDefaultAlignment = 4096;
inline constexpr const char* kCdsprpcLibraryEnv = "KESTREL_CDSPRPC_LIB";
inline constexpr const char* kCdsprpcDefaultLibrary = "libcdsprpc.so";

struct RpcmemOptions {
  std::string library_path;  // empty: $KESTREL_CDSPRPC_LIB, else "libcdsprpc.so"
  size_t alignment = kRpcmemDefaultAlignment;  // a power of two
  int heap_id = kRpcmemHeapIdSystem;
  uint32_t flags = kRpcmemDefaultFlags;
  std::shared_ptr<QnnMemRegistrar> registrar;  // null: qnn_mem_registrar() at bind time
};

class RpcmemAllocator final : public runtime::BufferAllocator {
 public:
  explicit RpcmemAllocator(RpcmemOptions options = {});
  // Frees whatever is still allocated (deregistering it) and closes the library.
  ~RpcmemAllocator() override;
  RpcmemAllocator(const RpcmemAllocator&) = delete;
  RpcmemAllocator& operator=(const RpcmemAllocator&) = delete;

  std::string_view name() const override { return "rpcmem"; }
  size_t alignment() const override { return options_.alignment; }
  // Aligned rpcmem memory, or null (logged once per allocator) when rpcmem cannot serve it.
  void* allocate(size_t bytes, const runtime::TensorInfo& info) override;
  // Registers the buffer (fd + offset) with every QNN context the registrar names for this
  // I/O, once per (context, address). A pointer that is not ours registers nothing.
  Status bind(void* buffer, const std::string& method, size_t io_index, bool is_input) override;
  // Deregisters every registration inside the allocation, then frees the raw base.
  void free(void* buffer) override;

  // Whether libcdsprpc and its symbols were found; why not otherwise.
  bool available() const { return api_.ok; }
  const std::string& unavailable_reason() const { return unavailable_reason_; }
  const std::string& library_path() const { return library_path_; }
  // True when rpcmem_alloc2 (size_t) is used, false for the legacy rpcmem_alloc (int).
  bool uses_alloc2() const { return api_.alloc2 != nullptr; }
  // The allocation containing `pointer` (any pointer inside it), as a region starting there.
  std::optional<QnnMemRegion> resolve(const void* pointer) const;
  size_t live_allocations() const;
  size_t live_registrations() const;

 private:
  struct Api {
    bool ok = false;
    void* (*alloc)(int heap_id, uint32_t flags, int size) = nullptr;
    void* (*alloc2)(int heap_id, uint32_t flags, size_t size) = nullptr;
    void (*free)(void* pointer) = nullptr;
    int (*to_fd)(void* pointer) = nullptr;
  };
  struct Allocation {
    void* base = nullptr;  // what rpcmem returned: always the pointer freed
    int fd = -1;
    size_t offset = 0;     // of the aligned pointer from base
    size_t bytes = 0;      // requested
    size_t total = 0;      // allocated
    runtime::TensorInfo info;
  };
  struct Registration {
    QnnContextId context;
    QnnMemHandle handle;
    std::shared_ptr<QnnMemRegistrar> registrar;
  };

  void note_fallback(const std::string& reason);
  // Caller holds mutex_. The allocation whose [aligned, aligned + bytes) contains pointer.
  std::map<uintptr_t, Allocation>::const_iterator find_allocation(const void* pointer) const;
  std::optional<QnnMemRegion> resolve_locked(const void* pointer) const;
  void release(std::map<uintptr_t, Allocation>::iterator it);

  RpcmemOptions options_;
  std::string library_path_;
  std::string unavailable_reason_;
  void* library_ = nullptr;
  Api api_;

  mutable std::mutex mutex_;
  std::map<uintptr_t, Allocation> allocations_;  // key: aligned address
  std::map<std::pair<QnnContextId, uintptr_t>, Registration> registrations_;
  std::set<std::string> logged_;
};

// Registers the "rpcmem" buffer allocator with the runtime (runtime::make_buffer_allocator).
// Explicit: call it once at start-up where the QNN backend is wanted.
void register_qnn_allocators();

}  // namespace kestrel::qnn
