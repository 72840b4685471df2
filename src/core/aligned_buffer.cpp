#include "kestrel/core/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#include "kestrel/core/error_helpers.h"

namespace kestrel {

namespace {

// aligned_alloc wants a size that is a multiple of the alignment; 0 when that does not fit.
size_t rounded_size(size_t bytes, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return 0;
  if (bytes > SIZE_MAX - (alignment - 1)) return 0;
  return (bytes + alignment - 1) / alignment * alignment;
}

}  // namespace

AlignedBuffer::AlignedBuffer(size_t bytes, size_t alignment) {
  if (bytes == 0) return;
  const size_t rounded = rounded_size(bytes, alignment);
  if (rounded == 0) throw std::bad_alloc();
  data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded);
  size_ = bytes;
}

Result<AlignedBuffer> AlignedBuffer::allocate(size_t bytes, size_t alignment) {
  if (bytes > 0 && rounded_size(bytes, alignment) == 0)
    return make_error(ErrorCode::kCapacity, "cannot allocate {} bytes aligned to {}: the size does not fit", bytes,
                      alignment);
  try {
    return AlignedBuffer(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "cannot allocate {} bytes: out of memory", bytes);
  }
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace kestrel
