// Optimized attention, rms_norm, silu and cast against float64 references and the portable kernels.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "cpu/cpu_test_util.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::testing {
namespace {

const runtime::KernelRegistry& portable() { return *kernels::portable_kernel_registry(); }

// ---- attention ----------------------------------------------------------------------------

struct AttentionCase {
  int64_t B, Hq, Hkv, T, C, Dh;
  std::vector<int64_t> positions;
  int64_t window = 0;  // > 0: query t sees slots (positions[t] - window, positions[t]]
};

std::vector<double> reference_attention(const AttentionCase& c, const std::vector<double>& q,
                                        const std::vector<double>& k, const std::vector<double>& v, double scale) {
  std::vector<double> out(q.size(), 0.0);
  const int64_t group = c.Hq / c.Hkv;
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t t = 0; t < c.T; ++t) {
        const int64_t qo = ((b * c.Hq + h) * c.T + t) * c.Dh;
        const int64_t kv = (b * c.Hkv + h / group) * c.C * c.Dh;
        const int64_t last = c.positions[t];
        const int64_t first = c.window > 0 ? std::max<int64_t>(0, last - c.window + 1) : 0;
        std::vector<double> p(static_cast<size_t>(last + 1), 0.0);
        double max = -INFINITY, sum = 0;
        for (int64_t s = first; s <= last; ++s) {
          double dot = 0;
          for (int64_t d = 0; d < c.Dh; ++d) dot += q[qo + d] * k[kv + s * c.Dh + d];
          p[s] = dot * scale;
          max = std::max(max, p[s]);
        }
        for (int64_t s = first; s <= last; ++s) sum += (p[s] = std::exp(p[s] - max));
        for (int64_t s = first; s <= last; ++s)
          for (int64_t d = 0; d < c.Dh; ++d) out[qo + d] += p[s] / sum * v[kv + s * c.Dh + d];
      }
  return out;
}

class OptimizedAttention : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(OptimizedAttention, MatchesReferenceAndIsThreadCountIndependent) {
  const AttentionCase c = GetParam();
  auto q = Tensor::from_floats(DType::kF32, {c.B, c.Hq, c.T, c.Dh}, random_floats(c.B * c.Hq * c.T * c.Dh, 1, -2, 2));
  auto k = Tensor::from_floats(DType::kF32, {c.B, c.Hkv, c.C, c.Dh}, random_floats(c.B * c.Hkv * c.C * c.Dh, 2, -2, 2));
  auto v = Tensor::from_floats(DType::kF32, {c.B, c.Hkv, c.C, c.Dh}, random_floats(c.B * c.Hkv * c.C * c.Dh, 3));
  auto pos = Tensor::from_ints({c.T}, c.positions);
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
  const program::Attrs attrs{{"scale", scale}};
  const auto want = reference_attention(c, q.values(), k.values(), v.values(), static_cast<float>(scale));

  Tensor y1(DType::kF32, q.shape()), y3(DType::kF32, q.shape());
  ASSERT_TRUE(run(*registry(1), "attention", {q.view(), k.view(), v.view(), pos.view()}, {y1.view()}, attrs).ok());
  ASSERT_TRUE(run(*registry(3), "attention", {q.view(), k.view(), v.view(), pos.view()}, {y3.view()}, attrs).ok());
  EXPECT_TRUE(all_close(y1.values(), want, 1e-5));
  EXPECT_TRUE(same_bytes(y1, y3));

  // In place: the output is q itself.
  Tensor inplace = q;
  ASSERT_TRUE(run(*registry(3), "attention", {inplace.view(), k.view(), v.view(), pos.view()}, {inplace.view()}, attrs)
                  .ok());
  EXPECT_TRUE(same_bytes(inplace, y1));

  // Scalar fallback: exactly the portable kernel.
  Tensor s(DType::kF32, q.shape()), p(DType::kF32, q.shape());
  ASSERT_TRUE(run(*registry(3, Isa::kScalar), "attention", {q.view(), k.view(), v.view(), pos.view()}, {s.view()}, attrs)
                  .ok());
  ASSERT_TRUE(run(portable(), "attention", {q.view(), k.view(), v.view(), pos.view()}, {p.view()}, attrs).ok());
  EXPECT_TRUE(same_bytes(s, p));
}

INSTANTIATE_TEST_SUITE_P(Shapes, OptimizedAttention,
                         ::testing::Values(AttentionCase{1, 4, 4, 1, 16, 64, {9}},         // decode
                                           AttentionCase{2, 6, 2, 3, 12, 20, {0, 5, 11}},  // GQA, odd Dh
                                           AttentionCase{1, 3, 1, 4, 8, 1, {0, 1, 2, 7}},  // Dh = 1
                                           AttentionCase{1, 2, 2, 2, 40, 13, {39, 17}},
                                           AttentionCase{1, 2, 1, 1, 300, 128, {299}},       // long context
                                           AttentionCase{1, 4, 2, 2, 70, 72, {69, 33}},      // 64 + 8 columns
                                           // decode tasks over several kv heads (rows of different
                                           // heads in one tile): GQA with two batch rows and a
                                           // 3 x 8 head size, four query heads per kv head, and
                                           // five kv heads (a partial last task) of 128
                                           AttentionCase{2, 6, 3, 1, 40, 24, {37}},
                                           AttentionCase{1, 16, 4, 1, 64, 64, {50}},
                                           AttentionCase{1, 10, 5, 1, 33, 128, {32}},
                                           // decode tasks over several kv heads with grouped query
                                           // heads (rows ordered query head, then kv head, so a
                                           // tile mixes kv heads): three query heads per kv head
                                           // with tail lanes, six kv heads (a partial last task),
                                           // and five query heads per kv head
                                           AttentionCase{1, 9, 3, 1, 45, 20, {44}},
                                           AttentionCase{1, 12, 6, 1, 50, 13, {31}},
                                           AttentionCase{1, 10, 2, 1, 40, 16, {39}},
                                           // deep in the cache: four query heads per kv head take
                                           // one kv head per task (rows prefetched ahead), two
                                           // take several
                                           AttentionCase{1, 16, 4, 1, 300, 72, {290}},
                                           AttentionCase{1, 8, 4, 1, 300, 40, {257}}),
                         [](const auto& info) {
                           const auto& c = info.param;
                           std::ostringstream name;
                           name << "B" << c.B << "_Hq" << c.Hq << "_Hkv" << c.Hkv << "_T" << c.T << "_Dh" << c.Dh;
                           return name.str();
                         });

// Sliding-window attention (the `window` attribute) against the float64 reference, on every
// SIMD set and thread count, including windows that start inside a chunk of 16 slots.
TEST(OptimizedAttentionWindow, MatchesReference) {
  for (const AttentionCase& c : {AttentionCase{1, 4, 2, 5, 70, 16, {3, 20, 21, 40, 69}, 8},
                                 AttentionCase{2, 2, 1, 3, 40, 33, {39, 5, 17}, 1},
                                 AttentionCase{1, 3, 3, 2, 50, 64, {49, 2}, 17},
                                 AttentionCase{1, 2, 2, 1, 30, 8, {29}, 100}}) {
    SCOPED_TRACE(::testing::Message() << "window " << c.window << " T " << c.T);
    auto q = Tensor::from_floats(DType::kF32, {c.B, c.Hq, c.T, c.Dh}, random_floats(c.B * c.Hq * c.T * c.Dh, 11, -2, 2));
    auto k = Tensor::from_floats(DType::kF32, {c.B, c.Hkv, c.C, c.Dh}, random_floats(c.B * c.Hkv * c.C * c.Dh, 12, -2, 2));
    auto v = Tensor::from_floats(DType::kF32, {c.B, c.Hkv, c.C, c.Dh}, random_floats(c.B * c.Hkv * c.C * c.Dh, 13));
    auto pos = Tensor::from_ints({c.T}, c.positions);
    const double scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
    const program::Attrs attrs{{"scale", scale}, {"window", c.window}};
    const auto want = reference_attention(c, q.values(), k.values(), v.values(), static_cast<float>(scale));
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor y1(DType::kF32, q.shape()), y2(DType::kF32, q.shape());
      ASSERT_TRUE(run(*registry(1, isa), "attention", {q.view(), k.view(), v.view(), pos.view()}, {y1.view()}, attrs).ok());
      ASSERT_TRUE(run(*registry(2, isa), "attention", {q.view(), k.view(), v.view(), pos.view()}, {y2.view()}, attrs).ok());
      EXPECT_TRUE(all_close(y1.values(), want, 1e-5));
      EXPECT_TRUE(same_bytes(y1, y2));
    }
  }
}

TEST(OptimizedAttentionWindow, AgreesWithThePortableKernelWhenItHasTheAttribute) {
  const AttentionCase c{1, 2, 1, 3, 24, 16, {5, 12, 23}, 4};
  auto q = Tensor::from_floats(DType::kF32, {1, 2, 3, 16}, random_floats(2 * 3 * 16, 14, -2, 2));
  auto k = Tensor::from_floats(DType::kF32, {1, 1, 24, 16}, random_floats(24 * 16, 15, -2, 2));
  auto v = Tensor::from_floats(DType::kF32, {1, 1, 24, 16}, random_floats(24 * 16, 16));
  auto pos = Tensor::from_ints({3}, c.positions);
  const program::Attrs windowed{{"scale", 0.25}, {"window", c.window}}, unlimited{{"scale", 0.25}};
  Tensor p_windowed(DType::kF32, q.shape()), p_unlimited(DType::kF32, q.shape()), got(DType::kF32, q.shape());
  const std::vector<TensorView> inputs{q.view(), k.view(), v.view(), pos.view()};
  const Status status = run(portable(), "attention", inputs, {p_windowed.view()}, windowed);
  ASSERT_TRUE(run(portable(), "attention", inputs, {p_unlimited.view()}, unlimited).ok());
  if (!status.ok() || same_bytes(p_windowed, p_unlimited))
    GTEST_SKIP() << "the portable attention kernel does not implement `window` in this build";
  ASSERT_TRUE(run(*registry(2), "attention", inputs, {got.view()}, windowed).ok());
  EXPECT_TRUE(all_close(got.values(), p_windowed.values(), 1e-5));
}

TEST(OptimizedAttentionWindow, RejectsANegativeWindow) {
  auto q = Tensor::from_floats(DType::kF32, {1, 1, 1, 8}, random_floats(8, 17));
  auto k = Tensor::from_floats(DType::kF32, {1, 1, 4, 8}, random_floats(32, 18));
  auto pos = Tensor::from_ints({1}, {2});
  Tensor out(DType::kF32, q.shape());
  const Status status = run(*registry(2), "attention", {q.view(), k.view(), k.view(), pos.view()}, {out.view()},
                            {{"scale", 0.5}, {"window", int64_t{-3}}});
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("window -3"), std::string::npos) << status.error().message();
}

TEST(OptimizedAttention, AQueryGivesTheSameBitsAloneAndInABlock) {
  // Decode attends one query; a prefill chunk attends many in blocks. Each query's result must
  // not depend on the block it is in. Slots past a query's position hold garbage (nan), which
  // must never be read. The shapes include the head sizes with their own one-row code, alone
  // (one kv head per query head) and grouped; the caches are f32 and f16.
  struct Shape {
    int64_t Hq, Hkv, Dh;
  };
  for (const Shape& shape : {Shape{4, 2, 24}, Shape{2, 2, 64}, Shape{1, 1, 128}, Shape{9, 3, 20}, Shape{16, 4, 64},
                             Shape{12, 6, 13}}) {
    SCOPED_TRACE(::testing::Message() << "Hq " << shape.Hq << " Hkv " << shape.Hkv << " Dh " << shape.Dh);
    const int64_t Hq = shape.Hq, Hkv = shape.Hkv, T = 9, C = 48, Dh = shape.Dh;
    std::vector<int64_t> positions;
    for (int64_t t = 0; t < T; ++t) positions.push_back(30 + t);
    auto q = Tensor::from_floats(DType::kF32, {1, Hq, T, Dh}, random_floats(Hq * T * Dh, 21, -2, 2));
    auto kv_values = random_floats(Hkv * C * Dh, 22, -2, 2);
    for (int64_t h = 0; h < Hkv; ++h)
      for (int64_t s = 39; s < C; ++s)
        for (int64_t d = 0; d < Dh; ++d) kv_values[(h * C + s) * Dh + d] = std::numeric_limits<float>::quiet_NaN();
    auto pos = Tensor::from_ints({T}, positions);
    for (const auto& [cache, window] : {std::pair{DType::kF32, int64_t{0}}, std::pair{DType::kF32, int64_t{7}},
                                        std::pair{DType::kF16, int64_t{0}}, std::pair{DType::kF16, int64_t{7}}}) {
      auto k = Tensor::from_floats(cache, {1, Hkv, C, Dh}, kv_values);
      auto v = Tensor::from_floats(cache, {1, Hkv, C, Dh}, kv_values);
      const program::Attrs attrs{{"scale", 0.2}, {"window", window}};
      for (Isa isa : simd_isas()) {
        SCOPED_TRACE(::testing::Message() << isa_label(isa) << " " << dtype_name(cache) << " cache, window " << window);
        Tensor block(DType::kF32, q.shape());
        ASSERT_TRUE(run(*registry(2, isa), "attention", {q.view(), k.view(), v.view(), pos.view()}, {block.view()}, attrs).ok());
        const auto all = block.floats(), qs = q.floats();
        for (int64_t t = 0; t < T; ++t) {
          std::vector<float> one;
          for (int64_t h = 0; h < Hq; ++h) one.insert(one.end(), qs.begin() + (h * T + t) * Dh, qs.begin() + (h * T + t + 1) * Dh);
          auto q1 = Tensor::from_floats(DType::kF32, {1, Hq, 1, Dh}, one);
          auto p1 = Tensor::from_ints({1}, {positions[t]});
          Tensor alone(DType::kF32, q1.shape());
          ASSERT_TRUE(run(*registry(1, isa), "attention", {q1.view(), k.view(), v.view(), p1.view()}, {alone.view()}, attrs).ok());
          const auto a = alone.floats();
          for (int64_t h = 0; h < Hq; ++h) {
            ASSERT_EQ(std::memcmp(a.data() + h * Dh, all.data() + (h * T + t) * Dh, Dh * sizeof(float)), 0)
                << "query " << t << " head " << h;
            for (int64_t d = 0; d < Dh; ++d) ASSERT_FALSE(std::isnan(a[h * Dh + d]));
          }
        }
      }
    }
  }
}

TEST(OptimizedAttention, EverySimdSetGivesTheSameBits) {
  // 512-bit vectors compute two keys' score lanes per register and reduce them in pairs; that
  // must change no bit against the 8-lane code of AVX2. Blocks of 1 to 16 queries (row tiles of
  // every size, partial 16-slot chunks), head sizes that take the paired path (multiples of 8)
  // and one that does not, grouped and plain heads, f32 and f16 caches.
  struct Shape {
    int64_t Hq, Hkv, T, Dh;
  };
  const std::vector<Isa> isas = simd_isas();
  if (isas.size() < 2) GTEST_SKIP() << "this CPU has one SIMD set";
  for (const Shape& shape : {Shape{2, 2, 16, 64}, Shape{4, 2, 7, 128}, Shape{3, 3, 5, 24}, Shape{2, 1, 1, 64},
                             Shape{2, 2, 3, 20}, Shape{8, 2, 13, 8}}) {
    const int64_t C = 75;
    std::vector<int64_t> positions;
    for (int64_t t = 0; t < shape.T; ++t) positions.push_back(C - shape.T + t - (t % 3 == 1 ? 9 : 0));
    SCOPED_TRACE(::testing::Message() << "Hq " << shape.Hq << " Hkv " << shape.Hkv << " T " << shape.T << " Dh "
                                      << shape.Dh);
    auto q = Tensor::from_floats(DType::kF32, {1, shape.Hq, shape.T, shape.Dh},
                                 random_floats(shape.Hq * shape.T * shape.Dh, 31, -2, 2));
    const auto k_values = random_floats(shape.Hkv * C * shape.Dh, 32, -2, 2);
    const auto v_values = random_floats(shape.Hkv * C * shape.Dh, 33);
    auto pos = Tensor::from_ints({shape.T}, positions);
    const program::Attrs attrs{{"scale", 0.3}};
    for (DType cache : {DType::kF32, DType::kF16}) {
      SCOPED_TRACE(dtype_name(cache));
      auto k = Tensor::from_floats(cache, {1, shape.Hkv, C, shape.Dh}, k_values);
      auto v = Tensor::from_floats(cache, {1, shape.Hkv, C, shape.Dh}, v_values);
      std::optional<Tensor> first;
      for (Isa isa : isas) {
        Tensor y(DType::kF32, q.shape());
        ASSERT_TRUE(run(*registry(2, isa), "attention", {q.view(), k.view(), v.view(), pos.view()}, {y.view()}, attrs).ok());
        if (!first) {
          first = y;
          continue;
        }
        EXPECT_TRUE(same_bytes(*first, y)) << isa_label(isa) << " differs from " << isa_label(isas.front());
      }
    }
  }
}

TEST(OptimizedAttentionCaches, MixedAndBf16CachesUseThePortableKernel) {
  const int64_t H = 2, T = 2, C = 8, Dh = 16;
  auto q = Tensor::from_floats(DType::kF32, {1, H, T, Dh}, random_floats(H * T * Dh, 4));
  auto pos = Tensor::from_ints({T}, {3, 4});
  for (const auto& [k_dtype, v_dtype] : {std::pair{DType::kF16, DType::kBF16}, std::pair{DType::kBF16, DType::kBF16},
                                         std::pair{DType::kF32, DType::kF16}}) {
    SCOPED_TRACE(::testing::Message() << dtype_name(k_dtype) << " " << dtype_name(v_dtype));
    auto k = Tensor::from_floats(k_dtype, {1, H, C, Dh}, random_floats(H * C * Dh, 5));
    auto v = Tensor::from_floats(v_dtype, {1, H, C, Dh}, random_floats(H * C * Dh, 6));
    Tensor got(DType::kF32, q.shape()), want(DType::kF32, q.shape());
    ASSERT_TRUE(run(*registry(3), "attention", {q.view(), k.view(), v.view(), pos.view()}, {got.view()}).ok());
    ASSERT_TRUE(run(portable(), "attention", {q.view(), k.view(), v.view(), pos.view()}, {want.view()}).ok());
    EXPECT_TRUE(same_bytes(got, want));
  }
}

// f16 caches, read directly by the optimized kernel: decode steps at positions on and off
// multiples of 16, with four or five kv heads (read side by side) shared by two or four query
// heads, and prompt chunks; head sizes with their own unrolled code (64, 128) and with tail
// lanes (72, 40, 20: past the last 16, or 8, values), some with a sliding window.
std::vector<AttentionCase> f16_cache_cases() {
  auto from = [](int64_t first, int64_t T) {
    std::vector<int64_t> positions;
    for (int64_t t = 0; t < T; ++t) positions.push_back(first + t);
    return positions;
  };
  return {AttentionCase{1, 8, 4, 1, 80, 64, {15}},    AttentionCase{1, 8, 4, 1, 80, 64, {16}},
          AttentionCase{1, 16, 4, 1, 80, 128, {47}},  AttentionCase{2, 10, 5, 1, 80, 72, {79}},
          AttentionCase{1, 8, 4, 1, 80, 40, {50}, 16}, AttentionCase{1, 8, 4, 1, 40, 20, {33}},
          AttentionCase{1, 4, 2, 5, 64, 64, from(3, 5)}, AttentionCase{1, 8, 2, 37, 96, 128, from(40, 37), 24},
          AttentionCase{1, 4, 1, 37, 64, 72, from(10, 37)}, AttentionCase{2, 4, 2, 5, 48, 40, {7, 16, 17, 31, 47}, 9},
          AttentionCase{1, 4, 2, 5, 24, 20, from(19, 5), 6},
          // grouped decode steps deep in the cache (one kv head per task, rows prefetched ahead;
          // the f32 caches of the bit-identity test take the several-head tasks where a kv head
          // has fewer than four query heads): positions past the depth that switches, with and
          // without a window, tail lanes
          AttentionCase{1, 8, 4, 1, 300, 64, {299}}, AttentionCase{1, 8, 2, 1, 290, 128, {256}},
          AttentionCase{1, 9, 3, 1, 280, 20, {270}, 100}};
}

std::string describe(const AttentionCase& c) {
  std::ostringstream text;
  text << "B" << c.B << " Hq" << c.Hq << " Hkv" << c.Hkv << " T" << c.T << " C" << c.C << " Dh" << c.Dh << " first position "
       << c.positions[0] << " window " << c.window;
  return text.str();
}

// An f32 tensor holding t's values (widening f16 is exact).
Tensor widened(const Tensor& t) {
  const auto values = t.values();
  return Tensor::from_floats(DType::kF32, t.shape(), std::vector<float>(values.begin(), values.end()));
}

// Random q and f16 caches for a case, and f32 caches holding the same values.
struct F16CacheOperands {
  Tensor q, k16, v16, k32, v32, pos;
  double scale;
  program::Attrs attrs;
  std::vector<TensorView> f16_inputs() const { return {q.view(), k16.view(), v16.view(), pos.view()}; }
  std::vector<TensorView> f32_inputs() const { return {q.view(), k32.view(), v32.view(), pos.view()}; }
};
F16CacheOperands f16_cache_operands(const AttentionCase& c) {
  const int64_t kv_values = c.B * c.Hkv * c.C * c.Dh;
  auto k16 = Tensor::from_floats(DType::kF16, {c.B, c.Hkv, c.C, c.Dh}, random_floats(kv_values, 32, -2, 2));
  auto v16 = Tensor::from_floats(DType::kF16, {c.B, c.Hkv, c.C, c.Dh}, random_floats(kv_values, 33));
  const double scale = 1.0 / std::sqrt(static_cast<double>(c.Dh));
  return {Tensor::from_floats(DType::kF32, {c.B, c.Hq, c.T, c.Dh}, random_floats(c.B * c.Hq * c.T * c.Dh, 31, -2, 2)),
          k16, v16, widened(k16), widened(v16), Tensor::from_ints({c.T}, c.positions), scale,
          program::Attrs{{"scale", scale}, {"window", c.window}}};
}

TEST(OptimizedAttentionF16Caches, MatchReferenceOnEverySimdSetAndThreadCount) {
  for (const AttentionCase& c : f16_cache_cases()) {
    SCOPED_TRACE(describe(c));
    const F16CacheOperands op = f16_cache_operands(c);
    const auto want =
        reference_attention(c, op.q.values(), op.k16.values(), op.v16.values(), static_cast<float>(op.scale));
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor y1(DType::kF32, op.q.shape()), y2(DType::kF32, op.q.shape());
      ASSERT_TRUE(run(*registry(1, isa), "attention", op.f16_inputs(), {y1.view()}, op.attrs).ok());
      ASSERT_TRUE(run(*registry(2, isa), "attention", op.f16_inputs(), {y2.view()}, op.attrs).ok());
      EXPECT_TRUE(all_close(y1.values(), want, 1e-5));
      EXPECT_TRUE(same_bytes(y1, y2));
    }
  }
}

TEST(OptimizedAttentionF16Caches, GiveTheBitsOfF32CachesHoldingTheSameValues) {
  for (const AttentionCase& c : f16_cache_cases()) {
    SCOPED_TRACE(describe(c));
    const F16CacheOperands op = f16_cache_operands(c);
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor from_f16(DType::kF32, op.q.shape()), from_f32(DType::kF32, op.q.shape());
      ASSERT_TRUE(run(*registry(2, isa), "attention", op.f16_inputs(), {from_f16.view()}, op.attrs).ok());
      ASSERT_TRUE(run(*registry(2, isa), "attention", op.f32_inputs(), {from_f32.view()}, op.attrs).ok());
      EXPECT_TRUE(same_bytes(from_f16, from_f32));
    }
  }
}

TEST(OptimizedAttentionF16Caches, OutputMayBeQ) {
  for (const AttentionCase& c : f16_cache_cases()) {
    SCOPED_TRACE(describe(c));
    const F16CacheOperands op = f16_cache_operands(c);
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor separate(DType::kF32, op.q.shape());
      ASSERT_TRUE(run(*registry(2, isa), "attention", op.f16_inputs(), {separate.view()}, op.attrs).ok());
      Tensor inplace = op.q;
      ASSERT_TRUE(run(*registry(2, isa), "attention", {inplace.view(), op.k16.view(), op.v16.view(), op.pos.view()},
                      {inplace.view()}, op.attrs)
                      .ok());
      EXPECT_TRUE(same_bytes(inplace, separate));
    }
  }
}

// ---- rms_norm -----------------------------------------------------------------------------

class OptimizedRmsNorm : public ::testing::TestWithParam<std::tuple<DType, int64_t>> {};

TEST_P(OptimizedRmsNorm, MatchesReference) {
  const auto [dtype, D] = GetParam();
  const int64_t rows = 3;
  const double eps = 1e-5;
  auto x = Tensor::from_floats(DType::kF32, {1, rows, D}, random_floats(rows * D, 7, -3, 3));
  auto w = Tensor::from_floats(dtype, {D}, random_floats(D, 8, 0.5f, 1.5f));
  const program::Attrs attrs{{"eps", eps}};
  Tensor y(DType::kF32, x.shape());
  ASSERT_TRUE(run(*registry(2), "rms_norm", {x.view(), w.view()}, {y.view()}, attrs).ok());
  const auto xs = x.values(), ws = w.values();
  std::vector<double> want(xs.size());
  for (int64_t r = 0; r < rows; ++r) {
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += xs[r * D + i] * xs[r * D + i];
    const double inv = 1.0 / std::sqrt(ss / D + static_cast<float>(eps));
    for (int64_t i = 0; i < D; ++i) want[r * D + i] = xs[r * D + i] * inv * ws[i];
  }
  EXPECT_TRUE(all_close(y.values(), want, 1e-5));

  Tensor inplace = x;
  ASSERT_TRUE(run(*registry(2), "rms_norm", {inplace.view(), w.view()}, {inplace.view()}, attrs).ok());
  EXPECT_TRUE(same_bytes(inplace, y));

  Tensor s(DType::kF32, x.shape()), p(DType::kF32, x.shape());
  ASSERT_TRUE(run(*registry(2, Isa::kScalar), "rms_norm", {x.view(), w.view()}, {s.view()}, attrs).ok());
  ASSERT_TRUE(run(portable(), "rms_norm", {x.view(), w.view()}, {p.view()}, attrs).ok());
  EXPECT_TRUE(same_bytes(s, p));
}

INSTANTIATE_TEST_SUITE_P(Sizes, OptimizedRmsNorm,
                         ::testing::Combine(::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                                            ::testing::Values(1, 7, 37, 768)),
                         [](const auto& info) {
                           std::ostringstream name;
                           name << dtype_name(std::get<0>(info.param)) << "_D" << std::get<1>(info.param);
                           return name.str();
                         });

// ---- silu ---------------------------------------------------------------------------------

// add and mul split over the pool: the float64 reference rounded to f32 (one IEEE operation per
// element, so exact), for a's own shape and a broadcast suffix, below and above the size that
// goes parallel, in place, and with the portable kernel's errors.
TEST(OptimizedBinary, AddAndMulMatchTheReferenceExactly) {
  for (const auto& [a_shape, b_shape] : std::vector<std::pair<Shape, Shape>>{
           {Shape{3, 5}, Shape{3, 5}}, {Shape{130, 257}, Shape{130, 257}}, {Shape{2, 300, 96}, Shape{96}},
           {Shape{40, 1000}, Shape{1000}}, {Shape{7, 9000}, Shape{7, 9000}}}) {
    SCOPED_TRACE(a_shape.to_string() + " with " + b_shape.to_string());
    const auto av = random_floats(a_shape.numel(), 31, -3, 3), bv = random_floats(b_shape.numel(), 32, -3, 3);
    auto a = Tensor::from_floats(DType::kF32, a_shape, av);
    auto b = Tensor::from_floats(DType::kF32, b_shape, bv);
    for (const std::string op : {"add", "mul"}) {
      SCOPED_TRACE(op);
      std::vector<float> want(av.size());
      for (size_t i = 0; i < av.size(); ++i) {
        const double x = av[i], y = bv[i % bv.size()];
        want[i] = static_cast<float>(op == "add" ? x + y : x * y);
      }
      for (int threads : {1, 2, 3}) {
        Tensor got(DType::kF32, a_shape);
        ASSERT_TRUE(run(*registry(threads), op, {a.view(), b.view()}, {got.view()}).ok());
        const auto g = got.floats();
        ASSERT_EQ(std::memcmp(g.data(), want.data(), want.size() * sizeof(float)), 0) << threads << " threads";
        Tensor inplace = a;
        ASSERT_TRUE(run(*registry(threads), op, {inplace.view(), b.view()}, {inplace.view()}).ok());
        EXPECT_TRUE(same_bytes(inplace, got));
      }
    }
  }
  auto a = Tensor::from_floats(DType::kF32, {4, 6}, random_floats(24, 33));
  auto b = Tensor::from_floats(DType::kF32, {4}, random_floats(4, 34));
  Tensor out(DType::kF32, a.shape());
  const Status optimized = run(*registry(2), "add", {a.view(), b.view()}, {out.view()});
  const Status reference = run(portable(), "add", {a.view(), b.view()}, {out.view()});
  ASSERT_FALSE(optimized.ok());
  ASSERT_FALSE(reference.ok());
  EXPECT_EQ(optimized.error().message(), reference.error().message());
  EXPECT_NE(optimized.error().message().find("neither a's shape"), std::string::npos) << optimized.error().message();
}

// rope split over the pool (the half style through the SIMD rows): the float64 rotation
// (within f32 rounding of its two products and one sum), the portable kernel's bits on every
// instruction set and thread count, in place, with f32 and f16 tables, both pair layouts and
// partial rotary dims (one of them leaving part of a vector); and the portable kernel's errors.
TEST(OptimizedRope, MatchesTheReferenceAndThePortableBitsOnAnyThreadCount) {
  const int64_t B = 1, H = 12, T = 64, Dh = 64, P = 300;
  std::vector<int64_t> positions(T);
  for (int64_t t = 0; t < T; ++t) positions[static_cast<size_t>(t)] = 200 + 3 * t % 97;
  auto pos = Tensor::from_ints({T}, positions);
  const auto xv = random_floats(static_cast<size_t>(B * H * T * Dh), 41, -2, 2);
  auto x = Tensor::from_floats(DType::kF32, {B, H, T, Dh}, xv);
  for (const std::string style : {"half", "interleaved"}) {
    for (int64_t rotary : {Dh, int64_t{32}, int64_t{36}}) {  // 18 pairs: a vector and a part
      for (DType table_dtype : {DType::kF32, DType::kF16}) {
        SCOPED_TRACE(style + " rotary " + std::to_string(rotary) + " " + std::string(dtype_name(table_dtype)));
        const int64_t half = rotary / 2;
        const auto angles = random_floats(static_cast<size_t>(P * half), 42, -3, 3);
        std::vector<float> cv(angles.size()), sv(angles.size());
        for (size_t i = 0; i < angles.size(); ++i) cv[i] = std::cos(angles[i]), sv[i] = std::sin(angles[i]);
        auto cos = Tensor::from_floats(table_dtype, {P, half}, cv);
        auto sin = Tensor::from_floats(table_dtype, {P, half}, sv);
        const auto c64 = cos.values(), s64 = sin.values();
        std::vector<double> want(xv.begin(), xv.end());
        for (int64_t row = 0; row < B * H * T; ++row) {
          const int64_t p = positions[static_cast<size_t>(row % T)];
          for (int64_t i = 0; i < half; ++i) {
            const int64_t i0 = style == "interleaved" ? 2 * i : i, i1 = style == "interleaved" ? 2 * i + 1 : i + half;
            const double x0 = xv[static_cast<size_t>(row * Dh + i0)], x1 = xv[static_cast<size_t>(row * Dh + i1)];
            const double c = c64[static_cast<size_t>(p * half + i)], s = s64[static_cast<size_t>(p * half + i)];
            want[static_cast<size_t>(row * Dh + i0)] = x0 * c - x1 * s;
            want[static_cast<size_t>(row * Dh + i1)] = x1 * c + x0 * s;
          }
        }
        const program::Attrs attrs{{"style", style}, {"rotary_dim", rotary}};
        Tensor expected(DType::kF32, x.shape());
        ASSERT_TRUE(run(portable(), "rope", {x.view(), pos.view(), cos.view(), sin.view()}, {expected.view()}, attrs).ok());
        for (Isa isa : simd_isas()) {
          SCOPED_TRACE(isa_label(isa));
          for (int threads : {1, 2, 3}) {
            Tensor got(DType::kF32, x.shape());
            ASSERT_TRUE(run(*registry(threads, isa), "rope", {x.view(), pos.view(), cos.view(), sin.view()},
                            {got.view()}, attrs).ok());
            std::vector<double> g(got.values());
            EXPECT_TRUE(all_close(g, want, 1e-6)) << threads << " threads";
            EXPECT_TRUE(same_bytes(got, expected)) << threads << " threads";
            Tensor inplace = x;
            ASSERT_TRUE(run(*registry(threads, isa), "rope", {inplace.view(), pos.view(), cos.view(), sin.view()},
                            {inplace.view()}, attrs).ok());
            EXPECT_TRUE(same_bytes(inplace, expected)) << threads << " threads, in place";
          }
        }
      }
    }
  }
  // A position past the tables fails before anything is written, with the portable message.
  auto bad = Tensor::from_ints({T}, std::vector<int64_t>(static_cast<size_t>(T), P));
  auto table = Tensor::from_floats(DType::kF32, {P, Dh / 2}, random_floats(static_cast<size_t>(P * Dh / 2), 43));
  Tensor out(DType::kF32, x.shape());
  const program::Attrs attrs{{"style", std::string("half")}};
  const Status optimized = run(*registry(2), "rope", {x.view(), bad.view(), table.view(), table.view()}, {out.view()}, attrs);
  const Status reference = run(portable(), "rope", {x.view(), bad.view(), table.view(), table.view()}, {out.view()}, attrs);
  ASSERT_FALSE(optimized.ok());
  ASSERT_FALSE(reference.ok());
  EXPECT_EQ(optimized.error().message(), reference.error().message());
}

// index_copy split over the pool (the KV-cache update): every slice lands where the index says,
// the rest of the cache is untouched, in place or into a new output, on any thread count; a
// repeated index keeps the portable kernel's last-write order; an index out of range fails as
// the portable kernel does.
TEST(OptimizedIndexCopy, WritesEverySliceOnAnyThreadCount) {
  const int64_t H = 12, C = 256, T = 96, Dh = 64;
  const auto cache_values = random_floats(static_cast<size_t>(H * C * Dh), 51);
  const auto src_values = random_floats(static_cast<size_t>(H * T * Dh), 52);
  auto cache = Tensor::from_floats(DType::kF32, {1, H, C, Dh}, cache_values);
  auto src = Tensor::from_floats(DType::kF32, {1, H, T, Dh}, src_values);
  std::vector<int64_t> slots(T);
  for (int64_t t = 0; t < T; ++t) slots[static_cast<size_t>(t)] = 100 + t;
  const program::Attrs attrs{{"axis", int64_t{2}}};
  for (const auto& index_values : {slots, std::vector<int64_t>(static_cast<size_t>(T), 7)}) {
    auto index = Tensor::from_ints({T}, index_values);
    std::vector<float> want(cache_values);
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < Dh; ++d)
          want[static_cast<size_t>((h * C + index_values[static_cast<size_t>(t)]) * Dh + d)] =
              src_values[static_cast<size_t>((h * T + t) * Dh + d)];
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, first index " << index_values[0]);
      Tensor out(DType::kF32, cache.shape());
      ASSERT_TRUE(run(*registry(threads), "index_copy", {cache.view(), index.view(), src.view()}, {out.view()}, attrs).ok());
      const auto g = out.floats();
      EXPECT_EQ(std::memcmp(g.data(), want.data(), want.size() * sizeof(float)), 0);
      Tensor inplace = cache;
      ASSERT_TRUE(
          run(*registry(threads), "index_copy", {inplace.view(), index.view(), src.view()}, {inplace.view()}, attrs).ok());
      EXPECT_TRUE(same_bytes(inplace, out));
    }
  }
  std::vector<int64_t> past(slots);
  past.back() = C;
  auto index = Tensor::from_ints({T}, past);
  Tensor inplace = cache;
  const Status optimized =
      run(*registry(2), "index_copy", {inplace.view(), index.view(), src.view()}, {inplace.view()}, attrs);
  ASSERT_FALSE(optimized.ok());
  EXPECT_TRUE(same_bytes(inplace, cache)) << "a failed update wrote to the cache";
  Tensor out(DType::kF32, cache.shape());
  const Status reference = run(portable(), "index_copy", {cache.view(), index.view(), src.view()}, {out.view()}, attrs);
  ASSERT_FALSE(reference.ok());
  EXPECT_EQ(optimized.error().message(), reference.error().message());
}

// transpose with its rows split over the pool: every output element is the input element the
// permutation names (computed here from the indices), for the attention layouts and a rank-5
// case, below and above the size that goes parallel.
TEST(OptimizedTranspose, MovesEveryElementOnAnyThreadCount) {
  struct Case {
    Shape shape;
    std::vector<int64_t> perm;
  };
  for (const Case& c : {Case{Shape{1, 128, 12, 64}, {0, 2, 1, 3}}, Case{Shape{1, 12, 128, 64}, {0, 2, 1, 3}},
                        Case{Shape{3, 5, 7}, {1, 0, 2}}, Case{Shape{4, 6, 5, 9, 40}, {3, 0, 2, 1, 4}}}) {
    SCOPED_TRACE(c.shape.to_string());
    const auto xv = random_floats(static_cast<size_t>(c.shape.numel()), 61);
    auto x = Tensor::from_floats(DType::kF32, c.shape, xv);
    const int rank = c.shape.rank();
    std::vector<int64_t> out_dims(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) out_dims[static_cast<size_t>(i)] = c.shape[c.perm[static_cast<size_t>(i)]];
    Shape out_shape = c.shape;
    for (int i = 0; i < rank; ++i) out_shape[i] = out_dims[static_cast<size_t>(i)];
    std::vector<float> want(xv.size());
    std::vector<int64_t> idx(static_cast<size_t>(rank), 0);  // output index, row-major
    for (size_t o = 0; o < want.size(); ++o) {
      int64_t in = 0;
      for (int a = 0; a < rank; ++a) {  // input axis a has output axis i with perm[i] == a
        int64_t at = 0;
        for (int i = 0; i < rank; ++i)
          if (c.perm[static_cast<size_t>(i)] == a) at = idx[static_cast<size_t>(i)];
        in = in * c.shape[a] + at;
      }
      want[o] = xv[static_cast<size_t>(in)];
      for (int i = rank - 1; i >= 0; --i) {
        if (++idx[static_cast<size_t>(i)] < out_dims[static_cast<size_t>(i)]) break;
        idx[static_cast<size_t>(i)] = 0;
      }
    }
    const program::Attrs attrs{{"perm", c.perm}};
    for (int threads : {1, 2, 3}) {
      Tensor got(DType::kF32, out_shape);
      ASSERT_TRUE(run(*registry(threads), "transpose", {x.view()}, {got.view()}, attrs).ok());
      const auto g = got.floats();
      EXPECT_EQ(std::memcmp(g.data(), want.data(), want.size() * sizeof(float)), 0) << threads << " threads";
    }
  }
}

TEST(OptimizedSilu, MatchesReferenceIncludingExtremes) {
  auto values = random_floats(1003, 9, -12, 12);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> special{0.0f, -0.0f, 79.9f, -79.9f, 80.0f, -80.0f, 88.0f, -88.0f, 100.0f, -100.0f,
                                   1e-30f, -1e-30f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 3.0f};
  // Specials both inside a vector of eight and in the tail.
  values.insert(values.begin() + 16, special.begin(), special.end());
  values.insert(values.end(), special.begin(), special.begin() + 5);
  auto x = Tensor::from_floats(DType::kF32, {static_cast<int64_t>(values.size())}, values);
  Tensor got(DType::kF32, x.shape()), want(DType::kF32, x.shape());
  ASSERT_TRUE(run(*registry(1), "silu", {x.view()}, {got.view()}).ok());
  ASSERT_TRUE(run(portable(), "silu", {x.view()}, {want.view()}).ok());
  const auto g = got.floats(), e = want.floats();
  for (size_t i = 0; i < g.size(); ++i) {
    SCOPED_TRACE(::testing::Message() << "x=" << values[i]);
    EXPECT_EQ(std::isnan(g[i]), std::isnan(e[i]));
    if (!std::isfinite(e[i])) {
      if (!std::isnan(e[i])) {
        EXPECT_EQ(g[i], e[i]);
      }
      continue;
    }
    const double x64 = values[i];
    const double ref = x64 / (1.0 + std::exp(-x64));
    EXPECT_NEAR(g[i], ref, 2e-6 * (std::fabs(ref) + 1e-30)) << "portable " << e[i];
  }

  Tensor inplace = x;
  ASSERT_TRUE(run(*registry(1), "silu", {inplace.view()}, {inplace.view()}).ok());
  EXPECT_TRUE(same_bytes(inplace, got));
}

// ---- cast to f16 (the KV-cache writes of f16-cache programs) -----------------------------

uint16_t half_bits(_Float16 h) { return std::bit_cast<uint16_t>(h); }

// Values that exercise every branch of f32 -> f16 rounding: random magnitudes over the whole
// f16 range and beyond, exact ties between f16 neighbours (normal and subnormal), the overflow
// threshold, signed zeros, infinities and nans with payloads.
std::vector<float> f16_cast_values(size_t random_count, uint32_t seed) {
  std::vector<float> values;
  for (uint16_t h : {uint16_t{0x0001}, uint16_t{0x0002}, uint16_t{0x03ff}, uint16_t{0x0400}, uint16_t{0x3c00},
                     uint16_t{0x3c01}, uint16_t{0x5a5a}, uint16_t{0x7bfe}}) {
    const double lo = static_cast<double>(std::bit_cast<_Float16>(h));
    const double hi = static_cast<double>(std::bit_cast<_Float16>(static_cast<uint16_t>(h + 1)));
    values.push_back(static_cast<float>((lo + hi) / 2));  // exactly halfway: ties to even
    values.push_back(-static_cast<float>((lo + hi) / 2));
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float v : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, -65520.0f, 1e6f, 0x1p-25f, 0x1.000002p-25f, 0x1p-26f,
                  inf, -inf, std::bit_cast<float>(0x7fa00001u), std::bit_cast<float>(0xffc12345u),
                  std::numeric_limits<float>::quiet_NaN()})
    values.push_back(v);
  // Then the random values: a call's last chunk of 16 holds only finite values (the hardware
  // conversion's path), for any tail length.
  const auto exponents = random_floats(random_count, seed, -30.0f, 17.5f);
  const auto signs = random_floats(random_count, seed + 1);
  for (size_t i = 0; i < random_count; ++i)
    values.push_back(std::copysign(std::exp2(exponents[i]), signs[i]));
  return values;
}

TEST(OptimizedCast, NarrowsToF16AsTheReferenceOnEverySimdSetAndThreadCount) {
  for (size_t random_count : {size_t{0}, size_t{7}, size_t{1001}, size_t{70003}}) {
    const auto values = f16_cast_values(random_count, 71);
    auto x = Tensor::from_floats(DType::kF32, {static_cast<int64_t>(values.size())}, values);
    Tensor portable_out(DType::kF16, x.shape());
    ASSERT_TRUE(run(portable(), "cast", {x.view()}, {portable_out.view()}, {{"dtype", std::string("f16")}}).ok());
    const auto* portable_bits = reinterpret_cast<const uint16_t*>(portable_out.storage().data());
    for (Isa isa : simd_isas())
      for (int threads : {1, 2, 3}) {
        SCOPED_TRACE(::testing::Message() << values.size() << " values, " << isa_label(isa) << ", " << threads
                                          << " threads");
        Tensor got(DType::kF16, x.shape());
        ASSERT_TRUE(run(*registry(threads, isa), "cast", {x.view()}, {got.view()}).ok());
        const auto* bits = reinterpret_cast<const uint16_t*>(got.storage().data());
        int reported = 0;
        for (size_t i = 0; i < values.size(); ++i) {
          // The compiler's own conversion is the reference; a nan is any nan of the same sign,
          // and then exactly the portable kernel's one quiet nan.
          const uint16_t want = half_bits(static_cast<_Float16>(values[i]));
          const bool nan = std::isnan(values[i]);
          const bool ok = nan ? (bits[i] & 0x7c00) == 0x7c00 && (bits[i] & 0x3ff) != 0 &&
                                    (bits[i] & 0x8000) == (want & 0x8000) && bits[i] == portable_bits[i]
                              : bits[i] == want && portable_bits[i] == want;
          if (!ok && reported++ < 5)
            ADD_FAILURE() << "x=" << values[i] << " (bits " << std::hex << std::bit_cast<uint32_t>(values[i])
                          << "): got " << bits[i] << ", want " << want << ", portable " << portable_bits[i];
        }
        EXPECT_EQ(reported, 0);
      }
  }
}

TEST(OptimizedCast, OtherCastsAndBadCallsBehaveAsThePortableKernel) {
  const auto values = random_floats(37, 72, -4, 4);
  auto x = Tensor::from_floats(DType::kF32, {37}, values);
  auto half = Tensor::from_floats(DType::kF16, {37}, values);
  // Widening and bf16 run the portable kernel: the same bits.
  for (const auto& [input, to] : {std::pair{&half, DType::kF32}, std::pair{&x, DType::kBF16}}) {
    Tensor got(to, input->shape()), want(to, input->shape());
    ASSERT_TRUE(run(*registry(2), "cast", {input->view()}, {got.view()}).ok());
    ASSERT_TRUE(run(portable(), "cast", {input->view()}, {want.view()}).ok());
    EXPECT_TRUE(same_bytes(got, want)) << dtype_name(to);
  }
  // A wrong shape, a dtype attribute that is not the output's, and an output overlapping x.
  Tensor short_out(DType::kF16, {36});
  Tensor out(DType::kF16, {37});
  TensorView overlapping = x.view();
  overlapping.dtype = DType::kF16;
  const std::vector<std::pair<std::vector<TensorView>, program::Attrs>> bad{
      {{short_out.view()}, {}}, {{out.view()}, {{"dtype", std::string("bf16")}}}, {{overlapping}, {}}};
  for (const auto& [outputs, attrs] : bad) {
    const Status optimized = run(*registry(1), "cast", {x.view()}, outputs, attrs);
    const Status reference = run(portable(), "cast", {x.view()}, outputs, attrs);
    ASSERT_FALSE(optimized.ok());
    ASSERT_FALSE(reference.ok());
    EXPECT_EQ(optimized.error().message(), reference.error().message());
  }
}

// rope, rms_norm, attention and index_copy decode their attributes when they are prepared (a
// call then looks none up by name): a bad attribute fails there, before any call, with the
// portable kernel's message.
TEST(OptimizedAttributes, BadOnesFailWhenPreparedWithThePortableMessage) {
  auto x = Tensor::from_floats(DType::kF32, {1, 2, 1, 8}, random_floats(16, 81));
  auto pos = Tensor::from_ints({1}, {0});
  auto table = Tensor::from_floats(DType::kF32, {4, 4}, random_floats(16, 82));
  auto weight = Tensor::from_floats(DType::kF32, {8}, random_floats(8, 83));
  auto cache = Tensor::from_floats(DType::kF32, {1, 2, 4, 8}, random_floats(64, 84));
  Tensor out(DType::kF32, x.shape()), cache_out(DType::kF32, cache.shape());
  struct Case {
    std::string op;
    std::vector<TensorView> inputs, outputs;
    program::Attrs attrs;
    std::string says;  // part of the message
  };
  const std::vector<Case> cases{
      {"rope", {x.view(), pos.view(), table.view(), table.view()}, {out.view()}, {{"style", std::string("spiral")}},
       "style 'spiral'"},
      {"rope", {x.view(), pos.view(), table.view(), table.view()}, {out.view()},
       {{"style", std::string("half")}, {"layout", std::string("tbhd")}}, "layout 'tbhd'"},
      {"rms_norm", {x.view(), weight.view()}, {out.view()}, {{"eps", -1.0}}, "eps -1"},
      {"rms_norm", {x.view(), weight.view()}, {out.view()}, {}, "eps"},
      {"attention", {x.view(), cache.view(), cache.view(), pos.view()}, {out.view()},
       {{"scale", std::string("big")}}, "scale"},
      {"index_copy", {cache.view(), pos.view(), x.view()}, {cache_out.view()}, {}, "axis"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op + ": " + c.says);
    auto prepared = runtime::BoundKernel::prepare(*registry(2), c.op, c.attrs, c.inputs, c.outputs);
    ASSERT_FALSE(prepared.ok());
    const Status reference = run(portable(), c.op, c.inputs, c.outputs, c.attrs);
    ASSERT_FALSE(reference.ok());
    EXPECT_EQ(prepared.error().message(), reference.error().message());
    EXPECT_NE(prepared.error().message().find(c.says), std::string::npos) << prepared.error().message();
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
