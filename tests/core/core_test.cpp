#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kestrel/core/aligned_buffer.h"
#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"

namespace kestrel {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return Error(ErrorCode::kInvalidArgument, "x must be positive");
  return x;
}

Result<int> doubled(int x) {
  KESTREL_ASSIGN_OR_RETURN(int value, parse_positive(x));
  return value * 2;
}

TEST(Result, CarriesValueOrError) {
  auto good = doubled(4);
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().to_string(), "invalid argument: x must be positive");
  EXPECT_EQ(bad.error().with_context("loading").message(), "loading: x must be positive");
}

TEST(DType, NamesRoundTrip) {
  for (DType d : {DType::kF32, DType::kF16, DType::kBF16, DType::kI32, DType::kI64, DType::kU8, DType::kQ8}) {
    auto back = dtype_from_name(dtype_name(d));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, d);
  }
  EXPECT_FALSE(dtype_from_name("f8").has_value());
  EXPECT_FALSE(dtype_is_valid(7));
}

TEST(DType, StorageBytes) {
  EXPECT_EQ(*dtype_storage_bytes(DType::kF16, 10, 5), 20u);
  EXPECT_EQ(*dtype_storage_bytes(DType::kQ8, 64 * 3, 64), 6u * kQ8BlockBytes);
  EXPECT_FALSE(dtype_storage_bytes(DType::kQ8, 30, 30).ok());
}

TEST(DType, HalfConversionsMatchReference) {
  // Every f16 bit pattern that is not NaN survives f16 -> f32 -> f16 exactly.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16(f), h) << h;
  }
  // Reference values computed from the definition: sign * 2^(e-15) * (1 + m/1024).
  EXPECT_EQ(f16_to_f32(0x3c00), 1.0f);
  EXPECT_EQ(f16_to_f32(0xc000), -2.0f);
  EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);     // rounds to inf
  EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_f32(0xc040), -3.0f);
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);  // tie to even
}

TEST(Tensor, ShapesAndStrides) {
  Shape shape{2, 3, 4};
  EXPECT_EQ(shape.numel(), 24);
  EXPECT_EQ(shape.dim(-1), 4);
  EXPECT_EQ(shape.to_string(), "[2, 3, 4]");
  auto view = TensorView::contiguous(DType::kF32, shape, nullptr);
  EXPECT_EQ(view.strides, (Shape{12, 4, 1}));
  EXPECT_TRUE(view.is_contiguous());
  EXPECT_EQ(*view.storage_bytes(), 96u);
}

TEST(Tensor, ContiguousMeansRowMajorStridesOfTheSameRank) {
  const Shape shape{2, 3, 4};
  TensorView view = TensorView::contiguous(DType::kF32, shape, nullptr);
  ASSERT_TRUE(view.is_contiguous());
  for (int axis = 0; axis < 3; ++axis) {  // any one stride off, including the last
    TensorView changed = view;
    changed.strides[axis] += 1;
    EXPECT_FALSE(changed.is_contiguous()) << "axis " << axis;
  }
  TensorView transposed = view;
  transposed.shape = Shape{2, 4, 3};
  EXPECT_FALSE(transposed.is_contiguous());
  TensorView fewer = view;
  fewer.strides = Shape{4, 1};
  EXPECT_FALSE(fewer.is_contiguous());
  EXPECT_TRUE(TensorView::contiguous(DType::kF32, Shape{}, nullptr).is_contiguous());  // a scalar
  // A size-1 axis still needs its row-major stride (the kernels index with the strides as given).
  TensorView ones = TensorView::contiguous(DType::kF32, Shape{1, 5}, nullptr);
  ones.strides[0] = 7;
  EXPECT_FALSE(ones.is_contiguous());
}

TEST(Tensor, ShapesEqualWhenRankAndEveryDimAgree) {
  EXPECT_EQ((Shape{2, 3}), (Shape{2, 3}));
  EXPECT_NE((Shape{2, 3}), (Shape{2, 4}));
  EXPECT_NE((Shape{2, 3}), (Shape{2, 3, 1}));
  EXPECT_NE((Shape{}), (Shape{1}));
  EXPECT_EQ(Shape{}, Shape{});
}

TEST(Tensor, DimsStringFormatsEveryDim) {
  EXPECT_EQ(dims_string({}), "[]");
  const std::vector<int64_t> negative{-1, 0, 7};
  EXPECT_EQ(dims_string(negative), "[-1, 0, 7]");
  // More dims than a Shape holds (a file's header may claim any number): all of them printed.
  const std::vector<int64_t> ten{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(dims_string(ten), "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]");
  EXPECT_EQ(Shape(std::span<const int64_t>(ten)).to_string(), "[1, 2, 3, 4, 5, 6, 7, 8]");
}

TEST(AlignedBuffer, IsAlignedAndZeroed) {
  AlignedBuffer buffer(1000);
  ASSERT_NE(buffer.data(), nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % kBufferAlignment, 0u);
  for (size_t i = 0; i < buffer.size(); ++i) ASSERT_EQ(buffer.data()[i], 0);
  AlignedBuffer moved = std::move(buffer);
  EXPECT_EQ(buffer.data(), nullptr);
  EXPECT_EQ(moved.size(), 1000u);
}

}  // namespace
}  // namespace kestrel
