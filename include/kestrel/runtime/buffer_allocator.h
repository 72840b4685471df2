// The backend-neutral hook through which a runner allocates method I/O buffers.
// A backend that wants zero-copy I/O (shared memory it can register with its device)
// provides an allocator; the runner never names the backend.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/runtime/method.h"

namespace kestrel::runtime {

class BufferAllocator {
 public:
  virtual ~BufferAllocator() = default;
  virtual std::string_view name() const = 0;
  // Alignment every buffer from allocate() has; the runner also uses it for its heap fallback.
  virtual size_t alignment() const = 0;
  // Returns null when this allocator cannot serve the request; the runner then uses the heap.
  virtual void* allocate(size_t bytes, const TensorInfo& info) = 0;
  // Called once per (buffer, method, io_index) after the buffer is bound to that method's
  // input or output (is_input tells which), so a backend can register it with its device.
  virtual Status bind(void* buffer, const std::string& method, size_t io_index, bool is_input) = 0;
  // Releases a buffer that allocate() returned.
  virtual void free(void* buffer) = 0;
};

// Factories registered by name ("heap", "memfd", and whatever backends add).
using BufferAllocatorFactory = std::unique_ptr<BufferAllocator> (*)();
void register_buffer_allocator(const std::string& name, BufferAllocatorFactory factory);
Result<std::unique_ptr<BufferAllocator>> make_buffer_allocator(const std::string& name);
std::vector<std::string> buffer_allocator_names();

}  // namespace kestrel::runtime
