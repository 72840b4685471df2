// An owning, 64-byte aligned, zero-initialized byte buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "kestrel/core/result.h"

namespace kestrel {

inline constexpr size_t kBufferAlignment = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  // Throws std::bad_alloc when the memory is not available, when `bytes` rounded up to the
  // alignment does not fit in size_t, or when `alignment` is not a power of two.
  explicit AlignedBuffer(size_t bytes, size_t alignment = kBufferAlignment);
  // The same without exceptions: a kCapacity error naming the size.
  static Result<AlignedBuffer> allocate(size_t bytes, size_t alignment = kBufferAlignment);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::span<uint8_t> span() { return {data_, size_}; }
  std::span<const uint8_t> span() const { return {data_, size_}; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace kestrel
