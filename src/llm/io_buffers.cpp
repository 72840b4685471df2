#include "kestrel/llm/io_buffers.h"

#include <cstring>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"
#include "kestrel/runtime/heap_allocator.h"

namespace kestrel::llm {

IoBuffers::IoBuffers(std::shared_ptr<runtime::BufferAllocator> allocator) : allocator_(std::move(allocator)) {}

IoBuffers::~IoBuffers() {
  for (const Buffer& buffer : buffers_) {
    if (buffer.from_allocator)
      allocator_->free(buffer.data);
    else
      runtime::aligned_heap_free(buffer.data);
  }
}

Result<void*> IoBuffers::allocate(const runtime::TensorInfo& info) {
  const size_t alignment = allocator_->alignment();
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return make_error(ErrorCode::kInvalidArgument, "allocator '{}' reports alignment {}, not a power of two",
                      allocator_->name(), alignment);
  void* data = allocator_->allocate(info.nbytes, info);
  bool from_allocator = data != nullptr;
  if (data != nullptr && reinterpret_cast<uintptr_t>(data) % alignment != 0) {
    allocator_->free(data);
    return make_error(ErrorCode::kInternal, "allocator '{}' returned a buffer for '{}' not aligned to {}",
                      allocator_->name(), info.name, alignment);
  }
  if (data == nullptr) {
    if (heap_fallbacks_++ == 0 && allocator_->name() != "heap")
      log(LogLevel::kInfo, "allocator '{}' declined '{}' ({} bytes); using the heap", allocator_->name(), info.name,
          info.nbytes);
    data = runtime::aligned_heap_allocate(info.nbytes, alignment);
    if (data == nullptr)
      return make_error(ErrorCode::kCapacity, "out of memory allocating {} bytes for '{}'", info.nbytes, info.name);
  } else {
    std::memset(data, 0, info.nbytes);
  }
  buffers_.push_back(Buffer{data, from_allocator});
  return data;
}

Status IoBuffers::bind(runtime::Method& method, size_t index, void* buffer, bool is_input) {
  const runtime::TensorInfo& info = is_input ? method.input_info(index) : method.output_info(index);
  const auto view = TensorView::contiguous(info.dtype, info.shape, buffer);
  KESTREL_RETURN_IF_ERROR(is_input ? method.set_input(index, view) : method.set_output(index, view));
  if (!bound_.emplace(buffer, method.name(), index, is_input).second) return ok_status();
  // Heap fallback buffers are not the allocator's to register.
  for (const Buffer& owned : buffers_)
    if (owned.data == buffer && owned.from_allocator) return allocator_->bind(buffer, method.name(), index, is_input);
  return ok_status();
}

Status IoBuffers::bind_input(runtime::Method& method, size_t index, void* buffer) {
  return bind(method, index, buffer, true);
}

Status IoBuffers::bind_output(runtime::Method& method, size_t index, void* buffer) {
  return bind(method, index, buffer, false);
}

}  // namespace kestrel::llm
