// reshape, transpose, slice and cast.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

TEST(Reshape, CopiesWhenNotAliasedAndAcceptsAlias) {
  auto x = HostTensor::from_floats(DType::kF32, {2, 6}, random_floats(12, 90));
  HostTensor y(DType::kF32, {3, 4});
  ASSERT_TRUE(run_kernel("reshape", {x.view()}, {y.view()}, {{"shape", std::vector<int64_t>{3, -1}}}).ok());
  EXPECT_EQ(y.values(), x.values());
  TensorView alias = TensorView::contiguous(DType::kF32, {12}, x.view().data);
  EXPECT_TRUE(run_kernel("reshape", {x.view()}, {alias}).ok());
  auto q = HostTensor::from_floats(DType::kQ8, {2, 64}, random_floats(128, 91));
  HostTensor q2(DType::kQ8, {4, 32});
  ASSERT_TRUE(run_kernel("reshape", {q.view()}, {q2.view()}).ok());
  EXPECT_EQ(q2.values(), q.values());
}

TEST(Reshape, RejectsMismatch) {
  HostTensor x(DType::kF32, {2, 6});
  HostTensor y(DType::kF32, {5});
  EXPECT_TRUE(fails_with(run_kernel("reshape", {x.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"reshape", "output has shape [5] (5 elements)", "x has shape [2, 6] (12 elements)"}));
  HostTensor y2(DType::kF32, {3, 4});
  EXPECT_TRUE(fails_with(run_kernel("reshape", {x.view()}, {y2.view()}, {{"shape", std::vector<int64_t>{4, 3}}}),
                         ErrorCode::kInvalidArgument, {"reshape", "shape attribute is [4, 3]"}));
  HostTensor yi(DType::kI64, {3, 4});
  EXPECT_TRUE(fails_with(run_kernel("reshape", {x.view()}, {yi.view()}), ErrorCode::kInvalidArgument,
                         {"reshape", "output has dtype i64, expected f32"}));
}

TEST(Transpose, PermutationsMatchReference) {
  const std::vector<int64_t> dims{2, 3, 4, 5};
  auto x = HostTensor::from_floats(DType::kF32, {2, 3, 4, 5}, random_floats(120, 92));
  for (const std::vector<int64_t>& perm :
       {std::vector<int64_t>{0, 2, 1, 3}, {3, 1, 0, 2}, {0, 1, 2, 3}, {1, 0, 3, 2}, {-1, 0, 1, 2}}) {
    std::vector<int64_t> p = perm;
    for (auto& a : p) a = a < 0 ? a + 4 : a;
    HostTensor y(DType::kF32, {dims[p[0]], dims[p[1]], dims[p[2]], dims[p[3]]});
    ASSERT_TRUE(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", perm}}).ok());
    EXPECT_EQ(y.values(), ref::transpose(x.values(), dims, p));
  }
}

TEST(Transpose, OtherDtypesAndRanks) {
  auto x = HostTensor::from_ints({2, 3}, {0, 1, 2, 3, 4, 5});
  HostTensor y(DType::kI64, {3, 2});
  ASSERT_TRUE(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", std::vector<int64_t>{1, 0}}}).ok());
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  auto h = HostTensor::from_floats(DType::kBF16, {1, 5, 7}, random_floats(35, 93));
  HostTensor hy(DType::kBF16, {7, 1, 5});
  ASSERT_TRUE(run_kernel("transpose", {h.view()}, {hy.view()}, {{"perm", std::vector<int64_t>{2, 0, 1}}}).ok());
  EXPECT_EQ(hy.values(), ref::transpose(h.values(), {1, 5, 7}, {2, 0, 1}));
}

// f32 to f16 in the copy: each value rounded as cast rounds it.
TEST(Transpose, F32ToF16IsTheTransposedCast) {
  auto values = random_floats(120, 94, -70000.0f, 70000.0f);  // some beyond f16's range: inf
  values[7] = std::numeric_limits<float>::quiet_NaN();
  values[8] = 1e-9f;  // below f16's smallest subnormal: zero
  values[9] = 3e-8f;  // rounds to f16's smallest subnormal
  auto x = HostTensor::from_floats(DType::kF32, {2, 3, 4, 5}, values);
  HostTensor y(DType::kF16, {2, 4, 3, 5}), y32(DType::kF32, {2, 4, 3, 5}), cast(DType::kF16, {2, 4, 3, 5});
  const program::Attrs perm{{"perm", std::vector<int64_t>{0, 2, 1, 3}}};
  ASSERT_TRUE(run_kernel("transpose", {x.view()}, {y.view()}, perm).ok());
  ASSERT_TRUE(run_kernel("transpose", {x.view()}, {y32.view()}, perm).ok());
  ASSERT_TRUE(run_kernel("cast", {y32.view()}, {cast.view()}, {{"dtype", std::string("f16")}}).ok());
  ASSERT_EQ(y.nbytes(), cast.nbytes());
  EXPECT_EQ(std::memcmp(y.bytes(), cast.bytes(), y.nbytes()), 0);
  // Within f16's rounding of the reference's values (finite ones in range).
  const auto got = y.values();
  const auto want = ref::transpose(x.values(), {2, 3, 4, 5}, {0, 2, 1, 3});
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isfinite(want[i]) && std::fabs(want[i]) < 65504.0) {
      EXPECT_LE(std::fabs(got[i] - want[i]), std::fabs(want[i]) * 0x1p-11 + 0x1p-25) << i;
    }
  }
  // No other conversion: f32 to bf16 is refused, naming the dtypes.
  HostTensor bf(DType::kBF16, {2, 4, 3, 5});
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {bf.view()}, perm), ErrorCode::kInvalidArgument,
                         {"transpose", "output has dtype bf16"}));
}

TEST(Transpose, RejectsBadPerm) {
  HostTensor x(DType::kF32, {2, 3, 4});
  HostTensor y(DType::kF32, {3, 2, 4});
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", std::vector<int64_t>{1, 0}}}),
                         ErrorCode::kInvalidArgument, {"transpose", "has 2 entries but x has rank 3"}));
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", std::vector<int64_t>{1, 1, 2}}}),
                         ErrorCode::kInvalidArgument, {"transpose", "repeats axis 1"}));
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", std::vector<int64_t>{1, 0, 3}}}),
                         ErrorCode::kOutOfRange, {"transpose", "perm entry 3"}));
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {y.view()}, {{"perm", std::vector<int64_t>{0, 1, 2}}}),
                         ErrorCode::kInvalidArgument, {"transpose", "output has shape [3, 2, 4], expected [2, 3, 4]"}));
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"transpose", "missing attribute 'perm'"}));
  EXPECT_TRUE(fails_with(run_kernel("transpose", {x.view()}, {x.view()}, {{"perm", std::vector<int64_t>{0, 1, 2}}}),
                         ErrorCode::kInvalidArgument, {"transpose", "output overlaps"}));
}

TEST(Slice, RangesAlongAnyAxis) {
  const std::vector<int64_t> dims{2, 7, 3};
  auto x = HostTensor::from_floats(DType::kF32, {2, 7, 3}, random_floats(42, 94));
  struct Case {
    int64_t axis, start, end;
    bool has_end;
    int64_t want_start, want_end;
  };
  for (const Case& c : {Case{1, 2, 5, true, 2, 5}, Case{1, -3, -1, true, 4, 6}, Case{1, 6, 0, false, 6, 7},
                        Case{-1, 0, 1, true, 0, 1}, Case{0, 1, 100, true, 1, 2}, Case{1, 4, 2, true, 4, 4}}) {
    std::vector<int64_t> out_dims = dims;
    const int axis = static_cast<int>(c.axis < 0 ? c.axis + 3 : c.axis);
    out_dims[axis] = c.want_end - c.want_start;
    HostTensor y(DType::kF32, Shape(std::span<const int64_t>(out_dims)));
    program::Attrs attrs{{"axis", c.axis}, {"start", c.start}};
    if (c.has_end) attrs["end"] = c.end;
    ASSERT_TRUE(run_kernel("slice", {x.view()}, {y.view()}, attrs).ok()) << c.axis << " " << c.start;
    EXPECT_EQ(y.values(), ref::slice(x.values(), dims, axis, c.want_start, c.want_end));
  }
}

TEST(Slice, LastTokenOfPrefill) {
  auto x = HostTensor::from_floats(DType::kF32, {1, 4, 3}, random_floats(12, 95));
  HostTensor y(DType::kF32, {1, 1, 3});
  ASSERT_TRUE(run_kernel("slice", {x.view()}, {y.view()},
                         {{"axis", int64_t{1}}, {"start", int64_t{3}}, {"end", int64_t{4}}})
                  .ok());
  EXPECT_EQ(y.values(), ref::slice(x.values(), {1, 4, 3}, 1, 3, 4));
}

TEST(Slice, RejectsWrongOutputAndAxis) {
  HostTensor x(DType::kF32, {2, 7});
  HostTensor y(DType::kF32, {2, 4});
  EXPECT_TRUE(fails_with(run_kernel("slice", {x.view()}, {y.view()}, {{"axis", int64_t{1}}, {"start", int64_t{2}}, {"end", int64_t{5}}}),
                         ErrorCode::kInvalidArgument, {"slice", "output has shape [2, 4], expected [2, 3]"}));
  EXPECT_TRUE(fails_with(run_kernel("slice", {x.view()}, {y.view()}, {{"axis", int64_t{2}}, {"start", int64_t{0}}}),
                         ErrorCode::kOutOfRange, {"slice", "axis 2"}));
  EXPECT_TRUE(fails_with(run_kernel("slice", {x.view()}, {y.view()}, {{"axis", int64_t{1}}}),
                         ErrorCode::kInvalidArgument, {"slice", "missing attribute 'start'"}));
}

TEST(Cast, BetweenFloatTypes) {
  auto values = random_floats(33, 96, -100.0f, 100.0f);
  values.push_back(1e-7f);  // f16 subnormal
  values.push_back(70000.0f);  // beyond f16 range
  values.push_back(-0.0f);
  auto x = HostTensor::from_floats(DType::kF32, {36}, values);
  HostTensor h(DType::kF16, {36});
  ASSERT_TRUE(run_kernel("cast", {x.view()}, {h.view()}, {{"dtype", std::string("f16")}}).ok());
  const auto hv = h.values();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(hv[i], f16_to_f32(f32_to_f16(values[i]))) << i;
  HostTensor b(DType::kBF16, {36});
  ASSERT_TRUE(run_kernel("cast", {h.view()}, {b.view()}, {{"dtype", std::string("bf16")}}).ok());
  const auto bv = b.values();
  for (size_t i = 0; i < values.size(); ++i) EXPECT_EQ(bv[i], bf16_to_f32(f32_to_bf16(static_cast<float>(hv[i])))) << i;
  HostTensor back(DType::kF32, {36});
  ASSERT_TRUE(run_kernel("cast", {b.view()}, {back.view()}).ok());
  EXPECT_EQ(back.values(), bv);
  HostTensor same(DType::kF32, {36});
  ASSERT_TRUE(run_kernel("cast", {x.view()}, {same.view()}, {{"dtype", std::string("f32")}}).ok());
  EXPECT_EQ(same.values(), x.values());
  // Same width in place: f16 -> bf16 over the same bytes.
  const auto h_before = h.values();
  TensorView h_as_bf16 = TensorView::contiguous(DType::kBF16, {36}, h.view().data);
  ASSERT_TRUE(run_kernel("cast", {h.view()}, {h_as_bf16}).ok());
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, h.bytes() + 2 * i, 2);
    EXPECT_EQ(bf16_to_f32(bits), bf16_to_f32(f32_to_bf16(static_cast<float>(h_before[i])))) << i;
  }
}

TEST(Cast, RejectsMismatchedAttributeAndNonFloat) {
  HostTensor x(DType::kF32, {4});
  HostTensor h(DType::kF16, {4});
  EXPECT_TRUE(fails_with(run_kernel("cast", {x.view()}, {h.view()}, {{"dtype", std::string("bf16")}}),
                         ErrorCode::kInvalidArgument, {"cast", "dtype attribute is bf16 but the output has dtype f16"}));
  EXPECT_TRUE(fails_with(run_kernel("cast", {x.view()}, {h.view()}, {{"dtype", std::string("f8")}}),
                         ErrorCode::kInvalidArgument, {"cast", "'f8'"}));
  HostTensor i(DType::kI64, {4});
  EXPECT_TRUE(fails_with(run_kernel("cast", {i.view()}, {h.view()}), ErrorCode::kInvalidArgument,
                         {"cast", "x has dtype i64"}));
  HostTensor h5(DType::kF16, {5});
  EXPECT_TRUE(fails_with(run_kernel("cast", {x.view()}, {h5.view()}), ErrorCode::kInvalidArgument,
                         {"cast", "output has shape [5], expected [4]"}));
}

// i64 -> i32 (index inputs of backends without 64-bit integers): exact in range, an error outside.
TEST(Cast, NarrowsI64ToI32) {
  const std::vector<int64_t> values{0, 7, -3, 2147483647, -2147483648LL};
  HostTensor x = HostTensor::from_ints({5}, values);
  HostTensor out(DType::kI32, {5});
  ASSERT_TRUE(run_kernel("cast", {x.view()}, {out.view()}, {{"dtype", std::string("i32")}}).ok());
  for (size_t i = 0; i < values.size(); ++i) {
    int32_t got;
    std::memcpy(&got, out.bytes() + 4 * i, 4);
    EXPECT_EQ(got, values[i]) << i;
  }
  HostTensor big = HostTensor::from_ints({2}, {1, 2147483648LL});
  HostTensor small(DType::kI32, {2});
  EXPECT_TRUE(fails_with(run_kernel("cast", {big.view()}, {small.view()}), ErrorCode::kOutOfRange,
                         {"cast", "element 1 (2147483648) does not fit i32"}));
  EXPECT_TRUE(fails_with(run_kernel("cast", {x.view()}, {out.view()}, {{"dtype", std::string("f32")}}),
                         ErrorCode::kInvalidArgument, {"cast", "i32 only"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
