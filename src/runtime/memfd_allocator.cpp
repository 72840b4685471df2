#include "kestrel/runtime/memfd_allocator.h"

#include <sys/mman.h>
#include <unistd.h>

#include "kestrel/core/log.h"

namespace kestrel::runtime {

MemfdAllocator::~MemfdAllocator() {
  for (const auto& [address, mapping] : mappings_) {
    munmap(const_cast<void*>(address), mapping.bytes);
    close(mapping.fd);
  }
}

size_t MemfdAllocator::alignment() const { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

void* MemfdAllocator::allocate(size_t bytes, const TensorInfo& info) {
  if (bytes == 0) return nullptr;
  const int fd = memfd_create(("kestrel:" + info.name).c_str(), MFD_CLOEXEC);
  if (fd < 0) {
    log(LogLevel::kWarn, "memfd_create failed for '{}'; using the heap", info.name);
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return nullptr;
  }
  void* address = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (address == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  std::lock_guard lock(mutex_);
  mappings_[address] = Mapping{fd, bytes};
  return address;
}

void MemfdAllocator::free(void* buffer) {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(buffer);
  if (it == mappings_.end()) return;
  munmap(buffer, it->second.bytes);
  close(it->second.fd);
  mappings_.erase(it);
}

int MemfdAllocator::fd_of(const void* buffer) const {
  std::lock_guard lock(mutex_);
  auto it = mappings_.find(buffer);
  return it == mappings_.end() ? -1 : it->second.fd;
}

}  // namespace kestrel::runtime
