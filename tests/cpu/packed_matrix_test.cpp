// The packed layouts of packed_matrix.h, byte by byte: q8 with every weight at its documented
// place, stored biased (w + 128, for vpdpbusd) or signed (for maddubs) as asked, the f16 scales
// beside them, and the rows and blocks past the matrix stored as zero weights with zero scales;
// f16 with the panels interleaved in pairs, an odd last panel paired with zeros.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "backends/cpu/packed_matrix.h"

namespace kestrel::cpu::detail {
namespace {

// A q8 matrix [N, K] of random codes (every value of int8 likely) and random f16 bit patterns.
std::vector<uint8_t> random_q8(int64_t N, int64_t K, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> data(static_cast<size_t>(N * (K / kQ8BlockSize) * kQ8BlockBytes));
  for (auto& byte : data) byte = static_cast<uint8_t>(rng());
  return data;
}

void expect_q8_layout(bool biased) {
  SCOPED_TRACE(biased ? "biased" : "signed");
  // Two panels (the second with 4 rows) and three blocks (the second step lacks its odd block).
  constexpr int64_t N = 20, K = 96;
  const std::vector<uint8_t> src = random_q8(N, K, 7);
  auto packed = PackedMatrix::pack(DType::kQ8, src.data(), N, K, nullptr, nullptr, biased);
  ASSERT_TRUE(packed.ok()) << packed.error().to_string();
  const PackedLayout& layout = (*packed)->layout();
  ASSERT_EQ(layout.panels, 2);
  ASSERT_EQ(layout.steps, 2);
  EXPECT_EQ(layout.q8_biased, biased);
  const uint8_t bias = biased ? 0x80 : 0x00;
  const int64_t blocks = K / kQ8BlockSize;
  for (int64_t n = 0; n < layout.panels * kPanelRows; ++n) {
    const uint8_t* panel = layout.panel(n / kPanelRows);
    const int64_t l = n % kPanelRows;
    for (int64_t b = 0; b < 2 * layout.steps; ++b) {
      const uint8_t* pair = panel + (b / 2) * kQ8PairBytes;
      const bool present = n < N && b < blocks;
      const uint8_t* block = present ? src.data() + (n * blocks + b) * kQ8BlockBytes : nullptr;
      uint8_t scale[2];
      std::memcpy(scale, pair + (b % 2) * 32 + l * 2, 2);
      EXPECT_EQ(scale[0], present ? block[0] : 0) << "row " << n << " block " << b;
      EXPECT_EQ(scale[1], present ? block[1] : 0) << "row " << n << " block " << b;
      const uint8_t* quads = pair + 64 + (b % 2) * 512;
      for (int64_t i = 0; i < kQ8BlockSize; ++i) {
        const uint8_t stored = quads[(i / 4) * 64 + l * 4 + (i % 4)];
        const uint8_t code = present ? block[2 + i] : 0;  // a missing weight is a zero
        ASSERT_EQ(stored, static_cast<uint8_t>(code ^ bias)) << "row " << n << " k " << b * kQ8BlockSize + i;
      }
    }
  }
}

TEST(PackedMatrixF16, PanelsAreInterleavedInPairs) {
  // Three panels (the third with 8 rows): one full pair, then the third beside a zero panel.
  constexpr int64_t N = 40, K = 5;
  std::mt19937 rng(3);
  std::vector<uint16_t> src(static_cast<size_t>(N * K));
  for (auto& bits : src) bits = static_cast<uint16_t>(rng());
  auto packed = PackedMatrix::pack(DType::kF16, src.data(), N, K, nullptr);
  ASSERT_TRUE(packed.ok()) << packed.error().to_string();
  const PackedLayout& layout = (*packed)->layout();
  ASSERT_EQ(layout.panels, 3);
  ASSERT_EQ(layout.interleave, 2);
  ASSERT_EQ((*packed)->bytes(), size_t{2 * 2 * K * 32});  // two pairs of [K][2][16] f16
  for (int64_t n = 0; n < 4 * kPanelRows; ++n) {
    const int64_t p = n / kPanelRows, l = n % kPanelRows;
    for (int64_t k = 0; k < K; ++k) {
      // Pair p / 2 at (p / 2) * K * 64 bytes; in it, k at k * 64, the pair's panel p % 2 at 32.
      uint16_t stored = 0;
      std::memcpy(&stored, layout.data + (p / 2) * K * 64 + k * 64 + (p % 2) * 32 + l * 2, 2);
      EXPECT_EQ(stored, n < N ? src[static_cast<size_t>(n * K + k)] : 0) << "row " << n << " k " << k;
      if (p < layout.panels) {
        EXPECT_EQ(layout.panel(p) + k * layout.step_stride() + l * 2,
                  layout.data + (p / 2) * K * 64 + k * 64 + (p % 2) * 32 + l * 2);
      }
    }
  }
}

TEST(PackedMatrixQ8, BiasedWeightsAreStoredAsCodePlus128) { expect_q8_layout(true); }
TEST(PackedMatrixQ8, SignedWeightsAreStoredAsTheirCodes) { expect_q8_layout(false); }

}  // namespace
}  // namespace kestrel::cpu::detail
