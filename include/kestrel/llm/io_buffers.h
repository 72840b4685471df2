// Method I/O buffers allocated through the backend-neutral allocator hook.
// Owns every buffer it hands out; frees each exactly once, through whoever allocated it.
#pragma once

#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/runtime/buffer_allocator.h"
#include "kestrel/runtime/method.h"

namespace kestrel::llm {

class IoBuffers {
 public:
  explicit IoBuffers(std::shared_ptr<runtime::BufferAllocator> allocator);
  ~IoBuffers();
  IoBuffers(const IoBuffers&) = delete;
  IoBuffers& operator=(const IoBuffers&) = delete;

  // A zeroed buffer of info.nbytes, aligned to the allocator's alignment. When the allocator
  // returns null the buffer comes from the heap instead (logged once per allocator).
  Result<void*> allocate(const runtime::TensorInfo& info);
  // Binds `buffer` to a method input (or output) and tells the allocator, once per
  // (buffer, method, index).
  Status bind_input(runtime::Method& method, size_t index, void* buffer);
  Status bind_output(runtime::Method& method, size_t index, void* buffer);

  size_t heap_fallbacks() const { return heap_fallbacks_; }
  size_t buffers() const { return buffers_.size(); }
  const runtime::BufferAllocator& allocator() const { return *allocator_; }

 private:
  struct Buffer {
    void* data;
    bool from_allocator;
  };
  Status bind(runtime::Method& method, size_t index, void* buffer, bool is_input);

  std::shared_ptr<runtime::BufferAllocator> allocator_;
  std::vector<Buffer> buffers_;
  std::set<std::tuple<void*, std::string, size_t, bool>> bound_;
  size_t heap_fallbacks_ = 0;
};

}  // namespace kestrel::llm
