// The program checksum is XXH3-64 whichever vector code the library picks at run time: the
// value a file records must not depend on the CPU that wrote or loads it. The reference is the
// library's plain entry point (its SSE2 code) and the hash of no bytes that XXH3 defines.
#include "program/checksum.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace kestrel::program::format {
namespace {

TEST(Checksum, EmptyInputHashesToXxh3sDefinedValue) {
  EXPECT_EQ(checksum({}), uint64_t{0x2D06800538D394C2});
}

TEST(Checksum, MatchesThePlainXxh3AtEverySizeClass) {
  std::mt19937_64 random(42);
  std::vector<uint8_t> bytes((size_t{1} << 20) + 37);
  for (auto& b : bytes) b = static_cast<uint8_t>(random());
  // XXH3 has separate code for up to 16, 128 and 240 bytes, then stripes of 64 and blocks of
  // 1 KiB; the vector code only runs in the last, with and without a partial stripe.
  for (size_t size : {size_t{1}, size_t{3}, size_t{16}, size_t{17}, size_t{128}, size_t{200}, size_t{240},
                      size_t{241}, size_t{1024}, size_t{1025}, size_t{4096 + 63}, size_t{65536}, bytes.size()}) {
    const std::span<const uint8_t> input(bytes.data() + 1, size - 1);  // also unaligned
    EXPECT_EQ(checksum(input), XXH3_64bits(input.data(), input.size())) << size;
    // Pieces of odd sizes through the streaming form give the same value.
    StreamingChecksum streaming;
    for (size_t at = 0; at < input.size(); at += 1000)
      streaming.update(input.subspan(at, std::min<size_t>(1000, input.size() - at)));
    EXPECT_EQ(streaming.digest(), XXH3_64bits(input.data(), input.size())) << size;
  }
}

}  // namespace
}  // namespace kestrel::program::format
