// Shared-memory I/O buffers backed by memfd: a device driver or another process can map the
// same pages through the file descriptor.
#pragma once

#include <map>
#include <mutex>

#include "kestrel/runtime/buffer_allocator.h"

namespace kestrel::runtime {

class MemfdAllocator final : public BufferAllocator {
 public:
  ~MemfdAllocator() override;
  std::string_view name() const override { return "memfd"; }
  size_t alignment() const override;  // the page size
  void* allocate(size_t bytes, const TensorInfo& info) override;
  Status bind(void*, const std::string&, size_t, bool) override { return ok_status(); }
  void free(void* buffer) override;
  // The descriptor backing `buffer`, or -1 if it is not one of ours.
  int fd_of(const void* buffer) const;

 private:
  struct Mapping {
    int fd;
    size_t bytes;
  };
  mutable std::mutex mutex_;
  std::map<const void*, Mapping> mappings_;
};

}  // namespace kestrel::runtime
