// attention over a static cache: causal by position, grouped-query heads, cache dtypes.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

struct AttentionCase {
  const char* name;
  int64_t B, Hq, Hkv, T, C, Dh;
  std::vector<int64_t> positions;
  DType cache_dtype;
  int64_t window = 0;
};
void PrintTo(const AttentionCase& c, std::ostream* os) { *os << c.name; }

class AttentionTest : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionTest, MatchesMaskedReference) {
  const auto& p = GetParam();
  auto q = HostTensor::from_floats(DType::kF32, {p.B, p.Hq, p.T, p.Dh}, random_floats(p.B * p.Hq * p.T * p.Dh, 50));
  const int64_t kv = p.B * p.Hkv * p.C * p.Dh;
  auto k = HostTensor::from_floats(p.cache_dtype, {p.B, p.Hkv, p.C, p.Dh}, random_floats(kv, 51));
  auto v = HostTensor::from_floats(p.cache_dtype, {p.B, p.Hkv, p.C, p.Dh}, random_floats(kv, 52));
  auto positions = HostTensor::from_ints({p.T}, p.positions);
  HostTensor out(DType::kF32, {p.B, p.Hq, p.T, p.Dh});
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.Dh));
  program::Attrs attrs{{"scale", scale}};
  if (p.window > 0) attrs["window"] = p.window;
  ASSERT_TRUE(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()}, attrs).ok());
  const auto want = ref::attention(q.values(), k.values(), v.values(), p.B, p.Hq, p.Hkv, p.T, p.C, p.Dh,
                                   p.positions, scale, p.window);
  EXPECT_TRUE(all_close(out.values(), want, 1e-5));
}

// layout "bthd": q and out [B, T, Hq, Dh], the reference's values transposed.
TEST_P(AttentionTest, TokensFirstLayoutMatchesTheReference) {
  const auto& p = GetParam();
  const auto q_heads = random_floats(p.B * p.Hq * p.T * p.Dh, 50);
  const ref::Vec q_tokens = ref::transpose(ref::Vec(q_heads.begin(), q_heads.end()), {p.B, p.Hq, p.T, p.Dh}, {0, 2, 1, 3});
  auto q = HostTensor::from_floats(DType::kF32, {p.B, p.T, p.Hq, p.Dh}, std::vector<float>(q_tokens.begin(), q_tokens.end()));
  const int64_t kv = p.B * p.Hkv * p.C * p.Dh;
  auto k = HostTensor::from_floats(p.cache_dtype, {p.B, p.Hkv, p.C, p.Dh}, random_floats(kv, 51));
  auto v = HostTensor::from_floats(p.cache_dtype, {p.B, p.Hkv, p.C, p.Dh}, random_floats(kv, 52));
  auto positions = HostTensor::from_ints({p.T}, p.positions);
  HostTensor out(DType::kF32, {p.B, p.T, p.Hq, p.Dh});
  const double scale = 1.0 / std::sqrt(static_cast<double>(p.Dh));
  program::Attrs attrs{{"scale", scale}, {"layout", std::string("bthd")}};
  if (p.window > 0) attrs["window"] = p.window;
  ASSERT_TRUE(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()}, attrs).ok());
  const auto heads_first = ref::attention(ref::Vec(q_heads.begin(), q_heads.end()), k.values(), v.values(), p.B, p.Hq,
                                          p.Hkv, p.T, p.C, p.Dh, p.positions, scale, p.window);
  EXPECT_TRUE(all_close(out.values(), ref::transpose(heads_first, {p.B, p.Hq, p.T, p.Dh}, {0, 2, 1, 3}), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(
        AttentionCase{"gqa_prefill_offset", 1, 6, 2, 5, 16, 13, {3, 4, 5, 6, 7}, DType::kF32},
        AttentionCase{"gqa_decode", 2, 6, 2, 1, 16, 13, {9}, DType::kF32},
        AttentionCase{"mha_from_zero", 1, 3, 3, 4, 4, 8, {0, 1, 2, 3}, DType::kF32},
        AttentionCase{"mqa_gaps", 1, 4, 1, 3, 20, 6, {2, 10, 19}, DType::kF32},
        AttentionCase{"f16_cache", 1, 6, 2, 5, 16, 13, {3, 4, 5, 6, 7}, DType::kF16},
        AttentionCase{"bf16_cache", 1, 4, 2, 2, 8, 16, {6, 7}, DType::kBF16},
        AttentionCase{"window_prefill", 1, 6, 2, 5, 16, 13, {3, 4, 5, 6, 7}, DType::kF32, 3},
        AttentionCase{"window_decode", 2, 4, 2, 1, 32, 8, {30}, DType::kF32, 7},
        AttentionCase{"window_one", 1, 2, 1, 3, 8, 4, {0, 5, 7}, DType::kF32, 1},
        AttentionCase{"window_wider_than_position", 1, 4, 2, 2, 16, 8, {2, 3}, DType::kF32, 10},
        AttentionCase{"window_f16_cache", 1, 4, 2, 4, 20, 8, {12, 13, 14, 15}, DType::kF16, 5}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Attention, IgnoresCacheSlotsPastThePosition) {
  // Slots after positions[t] hold NaN; they must not be read at all.
  const int64_t Hq = 2, Hkv = 1, T = 2, C = 8, Dh = 4;
  const std::vector<int64_t> pos{2, 3};
  auto kf = random_floats(Hkv * C * Dh, 53);
  auto vf = random_floats(Hkv * C * Dh, 54);
  for (int64_t s = 4; s < C; ++s)
    for (int64_t d = 0; d < Dh; ++d) kf[s * Dh + d] = vf[s * Dh + d] = std::numeric_limits<float>::quiet_NaN();
  auto q = HostTensor::from_floats(DType::kF32, {1, Hq, T, Dh}, random_floats(Hq * T * Dh, 55));
  auto k = HostTensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, kf);
  auto v = HostTensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, vf);
  auto positions = HostTensor::from_ints({T}, pos);
  HostTensor out(DType::kF32, {1, Hq, T, Dh});
  // No scale attribute: the default is 1/sqrt(Dh).
  ASSERT_TRUE(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()}).ok());
  const auto want = ref::attention(q.values(), k.values(), v.values(), 1, Hq, Hkv, T, C, Dh, pos, 0.5);
  EXPECT_TRUE(all_close(out.values(), want, 1e-5));
}

TEST(Attention, WindowIgnoresSlotsBeforeIt) {
  // With window W, query at position p reads slots p-W+1 .. p only: NaN anywhere else is harmless.
  const int64_t Hq = 2, Hkv = 1, T = 2, C = 12, Dh = 4, W = 3;
  const std::vector<int64_t> pos{6, 7};
  auto kf = random_floats(Hkv * C * Dh, 57);
  auto vf = random_floats(Hkv * C * Dh, 58);
  for (int64_t s = 0; s < C; ++s)
    if (s < 4 || s > 7)
      for (int64_t d = 0; d < Dh; ++d) kf[s * Dh + d] = vf[s * Dh + d] = std::numeric_limits<float>::quiet_NaN();
  auto q = HostTensor::from_floats(DType::kF32, {1, Hq, T, Dh}, random_floats(Hq * T * Dh, 59));
  auto k = HostTensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, kf);
  auto v = HostTensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, vf);
  auto positions = HostTensor::from_ints({T}, pos);
  HostTensor out(DType::kF32, {1, Hq, T, Dh});
  ASSERT_TRUE(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()},
                         {{"scale", 0.5}, {"window", W}})
                  .ok());
  const auto want = ref::attention(q.values(), k.values(), v.values(), 1, Hq, Hkv, T, C, Dh, pos, 0.5, W);
  EXPECT_TRUE(all_close(out.values(), want, 1e-5));
  HostTensor k_ok(DType::kF32, {1, Hkv, C, Dh});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k_ok.view(), k_ok.view(), positions.view()},
                                    {out.view()}, {{"window", int64_t{-1}}}),
                         ErrorCode::kInvalidArgument, {"attention", "window -1"}));
}

TEST(Attention, FirstPositionAttendsOnlyToSlotZero) {
  auto q = HostTensor::from_floats(DType::kF32, {1, 1, 1, 3}, {5.0f, -1.0f, 2.0f});
  auto k = HostTensor::from_floats(DType::kF32, {1, 1, 2, 3}, random_floats(6, 56));
  auto v = HostTensor::from_floats(DType::kF32, {1, 1, 2, 3}, {1.0f, 2.0f, 3.0f, 9.0f, 9.0f, 9.0f});
  auto positions = HostTensor::from_ints({1}, {0});
  HostTensor out(DType::kF32, {1, 1, 1, 3});
  ASSERT_TRUE(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()},
                         {{"scale", 1.0}})
                  .ok());
  EXPECT_TRUE(all_close(out.values(), {1.0, 2.0, 3.0}, 1e-6));
}

TEST(Attention, RejectsAnUnknownLayoutAndShapesOfTheOther) {
  HostTensor q(DType::kF32, {1, 6, 2, 8});
  HostTensor k(DType::kF32, {1, 2, 4, 8});
  HostTensor out(DType::kF32, {1, 6, 2, 8});
  auto positions = HostTensor::from_ints({2}, {0, 1});
  const std::vector<TensorView> inputs{q.view(), k.view(), k.view(), positions.view()};
  EXPECT_TRUE(fails_with(run_kernel("attention", inputs, {out.view()}, {{"layout", std::string("thbd")}}),
                         ErrorCode::kInvalidArgument, {"attention", "layout 'thbd'", "'bhtd', 'bthd'"}));
  // Read as [B, T, Hq, Dh], q [1, 6, 2, 8] has 6 queries, and positions only 2.
  EXPECT_TRUE(fails_with(run_kernel("attention", inputs, {out.view()}, {{"layout", std::string("bthd")}}),
                         ErrorCode::kInvalidArgument, {"attention", "positions"}));
}

TEST(Attention, RejectsBadPositionsAndShapes) {
  HostTensor q(DType::kF32, {1, 6, 2, 8});
  HostTensor k(DType::kF32, {1, 2, 4, 8});
  HostTensor v(DType::kF32, {1, 2, 4, 8});
  HostTensor out(DType::kF32, {1, 6, 2, 8});
  auto positions = HostTensor::from_ints({2}, {3, 4});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()}),
                         ErrorCode::kOutOfRange, {"attention", "position 4", "[0, 4)"}));
  auto ok_pos = HostTensor::from_ints({2}, {0, 1});
  HostTensor k4(DType::kF32, {1, 4, 4, 8});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k4.view(), k4.view(), ok_pos.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "6 heads", "4 kv heads"}));
  HostTensor k_dh(DType::kF32, {1, 2, 4, 7});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k_dh.view(), k_dh.view(), ok_pos.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "k has head_dim 7"}));
  HostTensor v_bad(DType::kF32, {1, 2, 5, 8});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k.view(), v_bad.view(), ok_pos.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "v has shape [1, 2, 5, 8]"}));
  HostTensor kq8(DType::kF32, {1, 2, 4, 8});
  TensorView kq8v = kq8.view();
  kq8v.dtype = DType::kI32;
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), kq8v, v.view(), ok_pos.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "k has dtype i32"}));
  HostTensor out_bad(DType::kF32, {1, 6, 3, 8});
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k.view(), v.view(), ok_pos.view()}, {out_bad.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "output has shape"}));
  EXPECT_TRUE(fails_with(run_kernel("attention", {q.view(), k.view(), v.view(), ok_pos.view()}, {k.view()}),
                         ErrorCode::kInvalidArgument, {"attention", "output"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
