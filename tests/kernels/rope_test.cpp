// rope in both pair layouts, with tables of several dtypes and unordered positions.
#include <gtest/gtest.h>

#include <cmath>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

// Tables of real angles, as an exporter would build them: theta(p, i) = p * base^(-2i/Dh).
std::pair<std::vector<float>, std::vector<float>> tables(int64_t P, int64_t half) {
  std::vector<float> cos(P * half), sin(P * half);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double theta = p * std::pow(10000.0, -static_cast<double>(i) / half);
      cos[p * half + i] = static_cast<float>(std::cos(theta));
      sin[p * half + i] = static_cast<float>(std::sin(theta));
    }
  return {cos, sin};
}

struct RopeCase {
  std::string style;
  DType table_dtype;
};
void PrintTo(const RopeCase& c, std::ostream* os) {
  *os << c.style << " with " << dtype_name(c.table_dtype) << " tables";
}

class RopeTest : public ::testing::TestWithParam<RopeCase> {};

TEST_P(RopeTest, MatchesComplexRotation) {
  const auto& [style, table_dtype] = GetParam();
  const int64_t B = 2, H = 3, T = 5, Dh = 14, P = 12, half = Dh / 2;
  const std::vector<int64_t> pos{7, 3, 11, 0, 4};
  auto [c, s] = tables(P, half);
  auto cos = HostTensor::from_floats(table_dtype, {P, half}, c);
  auto sin = HostTensor::from_floats(table_dtype, {P, half}, s);
  auto x = HostTensor::from_floats(DType::kF32, {B, H, T, Dh}, random_floats(B * H * T * Dh, 40));
  auto positions = HostTensor::from_ints({T}, pos);
  HostTensor y(DType::kF32, {B, H, T, Dh});
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()},
                         {{"style", style}})
                  .ok());
  const auto want = ref::rope(x.values(), B * H, T, Dh, pos, cos.values(), sin.values(), style);
  EXPECT_TRUE(all_close(y.values(), want, 1e-5));

  // In place gives the same result.
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {x.view()},
                         {{"style", style}})
                  .ok());
  EXPECT_TRUE(all_close(x.values(), want, 1e-5));
}

// layout "bthd": x [B, T, H, Dh], rotated by its token's position as in [B, H, T, Dh].
TEST_P(RopeTest, TokensFirstLayoutMatchesTheReference) {
  const auto& [style, table_dtype] = GetParam();
  const int64_t B = 2, H = 3, T = 5, Dh = 14, P = 12, half = Dh / 2;
  const std::vector<int64_t> pos{7, 3, 11, 0, 4};
  auto [c, s] = tables(P, half);
  auto cos = HostTensor::from_floats(table_dtype, {P, half}, c);
  auto sin = HostTensor::from_floats(table_dtype, {P, half}, s);
  const auto heads = random_floats(B * H * T * Dh, 40);
  const ref::Vec tokens = ref::transpose(ref::Vec(heads.begin(), heads.end()), {B, H, T, Dh}, {0, 2, 1, 3});
  auto x = HostTensor::from_floats(DType::kF32, {B, T, H, Dh}, std::vector<float>(tokens.begin(), tokens.end()));
  auto positions = HostTensor::from_ints({T}, pos);
  HostTensor y(DType::kF32, {B, T, H, Dh});
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()},
                         {{"style", style}, {"layout", std::string("bthd")}})
                  .ok());
  const auto want = ref::rope(ref::Vec(heads.begin(), heads.end()), B * H, T, Dh, pos, cos.values(), sin.values(), style);
  EXPECT_TRUE(all_close(y.values(), ref::transpose(want, {B, H, T, Dh}, {0, 2, 1, 3}), 1e-5));
  // An unknown layout is named.
  EXPECT_TRUE(fails_with(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()},
                                    {{"style", style}, {"layout", std::string("bhdt")}}),
                         ErrorCode::kInvalidArgument, {"rope", "layout 'bhdt'"}));
}

INSTANTIATE_TEST_SUITE_P(Styles, RopeTest,
                         ::testing::Values(RopeCase{"half", DType::kF32},
                                           RopeCase{"interleaved", DType::kF32},
                                           RopeCase{"half", DType::kF16},
                                           RopeCase{"interleaved", DType::kBF16}),
                         [](const auto& info) {
                           return info.param.style + "_" + std::string(dtype_name(info.param.table_dtype));
                         });

TEST(Rope, PairLayoutsDiffer) {
  // A quarter turn on the first pair only: half pairs (0, 2), interleaved pairs (0, 1).
  auto x = HostTensor::from_floats(DType::kF32, {1, 1, 1, 4}, {1.0f, 2.0f, 3.0f, 4.0f});
  auto cos = HostTensor::from_floats(DType::kF32, {1, 2}, {0.0f, 1.0f});
  auto sin = HostTensor::from_floats(DType::kF32, {1, 2}, {1.0f, 0.0f});
  auto positions = HostTensor::from_ints({1}, {0});
  HostTensor y(DType::kF32, {1, 1, 1, 4});
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()},
                         {{"style", std::string("half")}})
                  .ok());
  EXPECT_EQ(y.values(), (std::vector<double>{-3, 2, 1, 4}));
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()},
                         {{"style", std::string("interleaved")}})
                  .ok());
  EXPECT_EQ(y.values(), (std::vector<double>{-2, 1, 3, 4}));
}

// Partial rotary (Phi-3 / Phi-4-mini): the first R dims rotate in the chosen layout, the rest
// pass through, in place or not.
TEST_P(RopeTest, PartialRotaryLeavesTheTailAlone) {
  const auto& [style, table_dtype] = GetParam();
  const int64_t B = 1, H = 2, T = 3, Dh = 16, R = 12, P = 9, half = R / 2;
  const std::vector<int64_t> pos{8, 0, 5};
  auto [c, s] = tables(P, half);
  auto cos = HostTensor::from_floats(table_dtype, {P, half}, c);
  auto sin = HostTensor::from_floats(table_dtype, {P, half}, s);
  auto x = HostTensor::from_floats(DType::kF32, {B, H, T, Dh}, random_floats(B * H * T * Dh, 41));
  auto positions = HostTensor::from_ints({T}, pos);
  const program::Attrs attrs{{"style", style}, {"rotary_dim", R}};
  HostTensor y(DType::kF32, {B, H, T, Dh});
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()}, attrs).ok());
  const auto want = ref::rope(x.values(), B * H, T, Dh, pos, cos.values(), sin.values(), style, R);
  EXPECT_TRUE(all_close(y.values(), want, 1e-5));
  const auto input = x.values();
  for (int64_t row = 0; row < B * H * T; ++row)
    for (int64_t d = R; d < Dh; ++d) EXPECT_EQ(y.values()[row * Dh + d], input[row * Dh + d]);
  ASSERT_TRUE(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {x.view()}, attrs).ok());
  EXPECT_TRUE(all_close(x.values(), want, 1e-5));
}

TEST(Rope, PositionOutOfRangeIsNamed) {
  const int64_t P = 4;
  HostTensor x(DType::kF32, {1, 2, 2, 4});
  HostTensor cos(DType::kF32, {P, 2}), sin(DType::kF32, {P, 2});
  auto positions = HostTensor::from_ints({2}, {1, 4});
  HostTensor y(DType::kF32, {1, 2, 2, 4});
  const program::Attrs attrs{{"style", std::string("half")}};
  EXPECT_TRUE(fails_with(run_kernel("rope", {x.view(), positions.view(), cos.view(), sin.view()}, {y.view()}, attrs),
                         ErrorCode::kOutOfRange, {"rope", "position 4", "[0, 4)"}));
  auto negative = HostTensor::from_ints({2}, {-2, 0});
  EXPECT_TRUE(fails_with(run_kernel("rope", {x.view(), negative.view(), cos.view(), sin.view()}, {y.view()}, attrs),
                         ErrorCode::kOutOfRange, {"rope", "position -2"}));
}

TEST(Rope, RejectsBadStyleShapesAndDtypes) {
  HostTensor x(DType::kF32, {1, 2, 2, 4});
  HostTensor cos(DType::kF32, {4, 2}), sin(DType::kF32, {4, 2});
  auto positions = HostTensor::from_ints({2}, {0, 1});
  HostTensor y(DType::kF32, {1, 2, 2, 4});
  auto run = [&](const TensorView& xv, const TensorView& pv, const TensorView& cv, const program::Attrs& a) {
    return run_kernel("rope", {xv, pv, cv, sin.view()}, {y.view()}, a);
  };
  const program::Attrs half{{"style", std::string("half")}};
  EXPECT_TRUE(fails_with(run(x.view(), positions.view(), cos.view(), {{"style", std::string("neox")}}),
                         ErrorCode::kInvalidArgument, {"rope", "style 'neox'"}));
  EXPECT_TRUE(fails_with(run(x.view(), positions.view(), cos.view(), {}), ErrorCode::kInvalidArgument,
                         {"rope", "missing attribute 'style'"}));
  auto three = HostTensor::from_ints({3}, {0, 1, 2});
  EXPECT_TRUE(fails_with(run(x.view(), three.view(), cos.view(), half), ErrorCode::kInvalidArgument,
                         {"rope", "positions has shape [3], expected [2]"}));
  HostTensor cos_wide(DType::kF32, {4, 4});
  EXPECT_TRUE(fails_with(run(x.view(), positions.view(), cos_wide.view(), half), ErrorCode::kInvalidArgument,
                         {"rope", "cos has shape [4, 4], expected [4, 2]"}));
  HostTensor x_odd(DType::kF32, {1, 2, 2, 5});
  EXPECT_TRUE(fails_with(run(x_odd.view(), positions.view(), cos.view(), half), ErrorCode::kInvalidArgument,
                         {"rope", "rotary_dim 5 must be even"}));
  for (int64_t rotary : {0, 3, 6})
    EXPECT_TRUE(fails_with(run(x.view(), positions.view(), cos.view(), {{"style", std::string("half")},
                                                                         {"rotary_dim", rotary}}),
                           ErrorCode::kInvalidArgument, {"rope", "rotary_dim " + std::to_string(rotary)}));
  EXPECT_TRUE(fails_with(run(x.view(), positions.view(), cos.view(), {{"style", std::string("half")},
                                                                       {"rotary_dim", int64_t{2}}}),
                         ErrorCode::kInvalidArgument, {"rope", "cos has shape [4, 2], expected [4, 1]"}));
  HostTensor x3(DType::kF32, {2, 2, 4});
  EXPECT_TRUE(fails_with(run(x3.view(), positions.view(), cos.view(), half), ErrorCode::kInvalidArgument,
                         {"rope", "x has rank 3"}));
  HostTensor pos_f(DType::kF32, {2});
  EXPECT_TRUE(fails_with(run(x.view(), pos_f.view(), cos.view(), half), ErrorCode::kInvalidArgument,
                         {"rope", "positions has dtype f32, expected i64"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
