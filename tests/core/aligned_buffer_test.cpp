// AlignedBuffer: sizes whose rounding up to the alignment would wrap are refused, never turned
// into a tiny allocation (which once ended in heap corruption for a 2^64-1 byte arena).
#include <gtest/gtest.h>

#include <cstdint>
#include <new>

#include "kestrel/core/aligned_buffer.h"

namespace kestrel {
namespace {

TEST(AlignedBufferAllocate, ZeroedAndAligned) {
  auto buffer = AlignedBuffer::allocate(100);
  ASSERT_TRUE(buffer.ok()) << buffer.error().to_string();
  EXPECT_EQ(buffer->size(), 100u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer->data()) % kBufferAlignment, 0u);
  for (uint8_t byte : buffer->span()) EXPECT_EQ(byte, 0);
  auto empty = AlignedBuffer::allocate(0);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  EXPECT_EQ(empty->data(), nullptr);
}

TEST(AlignedBufferAllocate, SizesThatWrapWhenRoundedAreRefused) {
  for (size_t bytes : {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - kBufferAlignment + 2}) {
    auto buffer = AlignedBuffer::allocate(bytes);
    ASSERT_FALSE(buffer.ok()) << bytes;
    EXPECT_EQ(buffer.error().code(), ErrorCode::kCapacity);
    EXPECT_NE(buffer.error().message().find(std::to_string(bytes) + " bytes aligned to 64: the size does not fit"),
              std::string::npos)
        << buffer.error().message();
    EXPECT_THROW(AlignedBuffer{bytes}, std::bad_alloc);
  }
}

TEST(AlignedBufferAllocate, AlignmentMustBeAPowerOfTwo) {
  EXPECT_FALSE(AlignedBuffer::allocate(64, 48).ok());
  EXPECT_FALSE(AlignedBuffer::allocate(64, 0).ok());
  auto page = AlignedBuffer::allocate(10, 4096);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page->data()) % 4096, 0u);
}

}  // namespace
}  // namespace kestrel
