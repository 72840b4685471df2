// The q8 block format: quantize_q8, dequantize_q8_row, and the inline f16 conversion.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/convert.h"
#include "kernels/kernel_test_util.h"
#include "kestrel/kernels/quantize.h"

namespace kestrel::kernels::testing {
namespace {

TEST(Quantize, BlockLayoutScaleAndRounding) {
  const int64_t rows = 3, cols = 64;
  auto src = random_floats(rows * cols, 100, -2.0f, 2.0f);
  src[5] = 0.0f;
  std::vector<uint8_t> q(rows * q8_row_bytes(cols));
  ASSERT_EQ(q8_row_bytes(cols), 2u * 34u);
  ASSERT_TRUE(quantize_q8(src.data(), rows, cols, q.data()).ok());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < cols / 32; ++b) {
      const uint8_t* block = q.data() + r * q8_row_bytes(cols) + b * 34;
      float max_abs = 0.0f;
      for (int i = 0; i < 32; ++i) max_abs = std::max(max_abs, std::fabs(src[r * cols + b * 32 + i]));
      uint16_t scale_bits;
      std::memcpy(&scale_bits, block, 2);
      EXPECT_EQ(scale_bits, f32_to_f16(max_abs / 127.0f));
      const double scale = f16_to_f32(scale_bits);
      bool saw_extreme = false;
      for (int i = 0; i < 32; ++i) {
        const double x = src[r * cols + b * 32 + i];
        const int qv = static_cast<int8_t>(block[2 + i]);
        EXPECT_EQ(qv, static_cast<int>(std::round(x / scale))) << r << " " << b << " " << i;
        EXPECT_LE(std::abs(x - scale * qv), scale / 2 + 1e-12);
        saw_extreme |= std::abs(qv) >= 126;
      }
      EXPECT_TRUE(saw_extreme);  // the block maximum lands at the end of the int8 range
    }
}

TEST(Quantize, DequantizeMatchesIndependentDecode) {
  const int64_t cols = 96;
  auto t = HostTensor::from_floats(DType::kQ8, {2, cols}, random_floats(2 * cols, 101, -5.0f, 5.0f));
  const auto want = t.values();
  std::vector<float> row(cols);
  for (int64_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(dequantize_q8_row(t.bytes() + r * q8_row_bytes(cols), cols, row.data()).ok());
    for (int64_t i = 0; i < cols; ++i) EXPECT_EQ(row[i], want[r * cols + i]);
  }
}

TEST(Quantize, ZeroBlocksAndTinyValues) {
  std::vector<float> src(32, 0.0f);
  std::vector<uint8_t> q(34, 0xff);
  ASSERT_TRUE(quantize_q8(src.data(), 1, 32, q.data()).ok());
  for (uint8_t byte : q) EXPECT_EQ(byte, 0);
  std::vector<float> tiny(32, 1e-12f);  // the scale underflows f16 to zero
  ASSERT_TRUE(quantize_q8(tiny.data(), 1, 32, q.data()).ok());
  std::vector<float> back(32, 1.0f);
  ASSERT_TRUE(dequantize_q8_row(q.data(), 32, back.data()).ok());
  for (float v : back) EXPECT_EQ(v, 0.0f);
}

TEST(Quantize, RejectsBadArguments) {
  std::vector<float> src(64, 1.0f);
  std::vector<uint8_t> q(68);
  EXPECT_TRUE(fails_with(quantize_q8(src.data(), 2, 37, q.data()), ErrorCode::kInvalidArgument,
                         {"quantize_q8", "cols (37)", "multiple of 32"}));
  EXPECT_TRUE(fails_with(quantize_q8(src.data(), -1, 32, q.data()), ErrorCode::kInvalidArgument,
                         {"quantize_q8", "negative rows"}));
  src[40] = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(fails_with(quantize_q8(src.data(), 2, 32, q.data()), ErrorCode::kInvalidArgument,
                         {"quantize_q8", "row 1 col 8", "not finite"}));
  src[40] = 1e10f;
  EXPECT_TRUE(fails_with(quantize_q8(src.data(), 2, 32, q.data()), ErrorCode::kOutOfRange,
                         {"quantize_q8", "row 1 col 0", "f16 scale"}));
  std::vector<float> out(32);
  EXPECT_TRUE(fails_with(dequantize_q8_row(q.data(), 33, out.data()), ErrorCode::kInvalidArgument,
                         {"dequantize_q8_row", "cols (33)"}));
}

TEST(Convert, InlineHalfToFloatMatchesCoreForEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float fast = detail::half_to_float(static_cast<uint16_t>(h));
    const float core = f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(std::bit_cast<uint32_t>(fast), std::bit_cast<uint32_t>(core)) << "f16 bits " << h;
  }
}

}  // namespace
}  // namespace kestrel::kernels::testing
