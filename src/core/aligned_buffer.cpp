#include "kestrel/core/aligned_buffer.h"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace kestrel {

AlignedBuffer::AlignedBuffer(size_t bytes, size_t alignment) : size_(bytes) {
  if (bytes == 0) return;
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t rounded = (bytes + alignment - 1) / alignment * alignment;
  data_ = static_cast<uint8_t*>(std::aligned_alloc(alignment, rounded));
  if (data_ == nullptr) throw std::bad_alloc();
  std::memset(data_, 0, rounded);
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
