#include "kestrel/backends/qnn/rpcmem_allocator.h"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"

namespace kestrel::qnn {

namespace {

bool is_power_of_two(size_t n) { return n != 0 && (n & (n - 1)) == 0; }

std::string resolve_library_path(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv(kCdsprpcLibraryEnv); env != nullptr && *env != '\0') return env;
  return kCdsprpcDefaultLibrary;
}

}  // namespace

RpcmemAllocator::RpcmemAllocator(RpcmemOptions options)
    : options_(std::move(options)), library_path_(resolve_library_path(options_.library_path)) {
  if (!is_power_of_two(options_.alignment)) {
    unavailable_reason_ = fmt::format("alignment {} is not a power of two", options_.alignment);
    options_.alignment = kRpcmemDefaultAlignment;
    return;
  }
  dlerror();
  library_ = dlopen(library_path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library_ == nullptr) {
    const char* why = dlerror();
    unavailable_reason_ = fmt::format("cannot load {} ({}); set {} to its path", library_path_,
                                      why ? why : "unknown error", kCdsprpcLibraryEnv);
    return;
  }
  api_.alloc2 = reinterpret_cast<decltype(api_.alloc2)>(dlsym(library_, "rpcmem_alloc2"));
  api_.alloc = reinterpret_cast<decltype(api_.alloc)>(dlsym(library_, "rpcmem_alloc"));
  api_.free = reinterpret_cast<decltype(api_.free)>(dlsym(library_, "rpcmem_free"));
  api_.to_fd = reinterpret_cast<decltype(api_.to_fd)>(dlsym(library_, "rpcmem_to_fd"));
  std::vector<std::string> missing;
  if (api_.alloc2 == nullptr && api_.alloc == nullptr) missing.emplace_back("rpcmem_alloc2/rpcmem_alloc");
  if (api_.free == nullptr) missing.emplace_back("rpcmem_free");
  if (api_.to_fd == nullptr) missing.emplace_back("rpcmem_to_fd");
  if (!missing.empty()) {
    unavailable_reason_ = fmt::format("{} lacks {}", library_path_, fmt::join(missing, ", "));
    api_ = Api{};
    dlclose(library_);
    library_ = nullptr;
    return;
  }
  api_.ok = true;
}

RpcmemAllocator::~RpcmemAllocator() {
  {
    std::lock_guard lock(mutex_);
    if (!allocations_.empty()) {
      log(LogLevel::kDebug, "rpcmem: freeing {} buffers still allocated at shutdown", allocations_.size());
    }
    while (!allocations_.empty()) release(allocations_.begin());
  }
  if (library_ != nullptr) dlclose(library_);
}

void RpcmemAllocator::note_fallback(const std::string& reason) {
  // Called with mutex_ held. One warning per kind of fallback (the text before ':'), so a
  // runner allocating many buffers explains itself once.
  const std::string category = reason.substr(0, reason.find(':'));
  if (logged_.insert(category).second) {
    log(LogLevel::kWarn, "rpcmem: {}; I/O buffers fall back to the heap (copies instead of zero-copy)", reason);
  } else {
    log(LogLevel::kDebug, "rpcmem: {}", reason);
  }
}

void* RpcmemAllocator::allocate(size_t bytes, const runtime::TensorInfo& info) {
  std::lock_guard lock(mutex_);
  if (!api_.ok) {
    note_fallback("unavailable: " + unavailable_reason_);
    return nullptr;
  }
  if (bytes == 0) return nullptr;
  const size_t align = options_.alignment;
  if (bytes > SIZE_MAX - 2 * align) {
    note_fallback(fmt::format("too large: {} bytes for '{}'", bytes, info.name));
    return nullptr;
  }
  const size_t rounded = (bytes + align - 1) / align * align;

  auto raw_alloc = [&](size_t size) -> void* {
    if (api_.alloc2 != nullptr) return api_.alloc2(options_.heap_id, options_.flags, size);
    return api_.alloc(options_.heap_id, options_.flags, static_cast<int>(size));
  };
  auto fits_legacy = [&](size_t size) { return api_.alloc2 != nullptr || size <= static_cast<size_t>(INT_MAX); };

  // rpcmem memory is page aligned on devices; ask for the rounded size first and pad only when
  // the base does not have the alignment.
  if (!fits_legacy(rounded)) {
    note_fallback(fmt::format(
        "too large: {} bytes for '{}' exceed INT_MAX, and {} has only rpcmem_alloc (int size), no "
        "rpcmem_alloc2",
        rounded, info.name, library_path_));
    return nullptr;
  }
  size_t total = rounded;
  void* base = raw_alloc(total);
  if (base != nullptr && reinterpret_cast<uintptr_t>(base) % align != 0) {
    api_.free(base);
    total = rounded + align - 1;
    if (!fits_legacy(total)) {
      note_fallback(fmt::format("too large: {} bytes for '{}' (with alignment padding) exceed INT_MAX "
                                "for rpcmem_alloc", total, info.name));
      return nullptr;
    }
    base = raw_alloc(total);
  }
  if (base == nullptr) {
    note_fallback(fmt::format("allocation failed: rpcmem could not allocate {} bytes for '{}' (heap {}, flags {})",
                              total, info.name, options_.heap_id, options_.flags));
    return nullptr;
  }
  const int fd = api_.to_fd(base);
  if (fd < 0) {
    api_.free(base);
    note_fallback(fmt::format("no descriptor: rpcmem_to_fd failed for '{}'", info.name));
    return nullptr;
  }
  const uintptr_t b = reinterpret_cast<uintptr_t>(base);
  const uintptr_t aligned = (b + align - 1) / align * align;
  Allocation a;
  a.base = base;
  a.fd = fd;
  a.offset = aligned - b;
  a.bytes = bytes;
  a.total = total;
  a.info = info;
  allocations_.emplace(aligned, std::move(a));
  return reinterpret_cast<void*>(aligned);
}

std::map<uintptr_t, RpcmemAllocator::Allocation>::const_iterator RpcmemAllocator::find_allocation(
    const void* pointer) const {
  const auto p = reinterpret_cast<uintptr_t>(pointer);
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return allocations_.end();
  --it;
  if (p < it->first + it->second.bytes) return it;
  return allocations_.end();
}

std::optional<QnnMemRegion> RpcmemAllocator::resolve(const void* pointer) const {
  std::lock_guard lock(mutex_);
  return resolve_locked(pointer);
}

std::optional<QnnMemRegion> RpcmemAllocator::resolve_locked(const void* pointer) const {
  auto it = find_allocation(pointer);
  if (it == allocations_.end()) return std::nullopt;
  const auto p = reinterpret_cast<uintptr_t>(pointer);
  const Allocation& a = it->second;
  QnnMemRegion region;
  region.address = const_cast<void*>(pointer);
  region.base = a.base;
  region.fd = a.fd;
  region.offset = p - reinterpret_cast<uintptr_t>(a.base);
  region.bytes = it->first + a.bytes - p;
  region.total = a.total;
  region.info = a.info;
  return region;
}

Status RpcmemAllocator::bind(void* buffer, const std::string& method, size_t io_index, bool is_input) {
  std::shared_ptr<QnnMemRegistrar> registrar = options_.registrar ? options_.registrar : qnn_mem_registrar();
  if (registrar == nullptr) return ok_status();  // no QNN context in this process: nothing to register
  if (!resolve(buffer)) {
    log(LogLevel::kDebug, "rpcmem: {} {} {} of '{}' is not an rpcmem buffer; not registered",
        is_input ? "input" : "output", io_index, buffer, method);
    return ok_status();
  }
  auto contexts = registrar->contexts_for(method, io_index, is_input);
  if (!contexts.ok()) {
    return contexts.error().with_context(fmt::format("rpcmem: binding {} {} of '{}'",
                                                     is_input ? "input" : "output", io_index, method));
  }
  std::lock_guard lock(mutex_);
  auto region = resolve_locked(buffer);
  if (!region) return ok_status();  // freed meanwhile
  for (QnnContextId context : *contexts) {
    const auto key = std::make_pair(context, reinterpret_cast<uintptr_t>(buffer));
    if (registrations_.count(key)) continue;  // prefill and decode share it: registered once
    auto handle = registrar->register_memory(context, *region);
    if (!handle.ok()) {
      return handle.error().with_context(
          fmt::format("rpcmem: registering '{}' (fd {}, offset {}) with QNN context {}", region->info.name,
                      region->fd, region->offset, context));
    }
    registrations_.emplace(key, Registration{context, *handle, registrar});
  }
  return ok_status();
}

void RpcmemAllocator::release(std::map<uintptr_t, Allocation>::iterator it) {
  const uintptr_t begin = it->first;
  const uintptr_t end = it->first + it->second.bytes;
  for (auto r = registrations_.begin(); r != registrations_.end();) {
    if (r->first.second >= begin && r->first.second < end) {
      r->second.registrar->deregister_memory(r->second.context, r->second.handle);
      r = registrations_.erase(r);
    } else {
      ++r;
    }
  }
  api_.free(it->second.base);  // the raw base, never the aligned pointer
  allocations_.erase(it);
}

void RpcmemAllocator::free(void* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(buffer));
  if (it == allocations_.end()) {
    log(LogLevel::kWarn, "rpcmem: free({}) of a pointer this allocator did not return; ignored", buffer);
    return;
  }
  release(it);
}

size_t RpcmemAllocator::live_allocations() const {
  std::lock_guard lock(mutex_);
  return allocations_.size();
}

size_t RpcmemAllocator::live_registrations() const {
  std::lock_guard lock(mutex_);
  return registrations_.size();
}

void register_qnn_allocators() {
  runtime::register_buffer_allocator(
      "rpcmem", [] { return std::unique_ptr<runtime::BufferAllocator>(new RpcmemAllocator()); });
}

}  // namespace kestrel::qnn
