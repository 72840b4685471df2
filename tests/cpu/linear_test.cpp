// Optimized linear against a float64 reference on the decoded weights, for every weight dtype,
// odd sizes, several thread counts, both q8 modes and the forced scalar fallback; and the
// property prefill and decode rely on: a row's result does not depend on how many rows the
// call carries, on the thread count, nor (but for bf16 dot products) on the instruction set.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <optional>
#include <tuple>

#include "cpu/cpu_test_util.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::testing {
namespace {

std::vector<double> reference_linear(const std::vector<double>& x, int64_t M, int64_t K, const std::vector<double>& w,
                                     int64_t N, const std::vector<double>& bias) {
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias.empty() ? 0.0 : bias[n];
      for (int64_t k = 0; k < K; ++k) acc += x[m * K + k] * w[n * K + k];
      y[m * N + n] = acc;
    }
  return y;
}

// The error of q8 x q8: each activation is rounded to a multiple of its block's scale
// max|x| / 127, so it moves by at most half of that; plus float rounding of the sums.
std::vector<double> q8_bound(const std::vector<double>& x, int64_t M, int64_t K, const std::vector<double>& w,
                             int64_t N) {
  std::vector<double> bound(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double err = 0, magnitude = 0;
      for (int64_t b = 0; b < K / 32; ++b) {
        double amax = 0;
        for (int64_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[m * K + b * 32 + i]));
        const double step = amax / 127.0;
        for (int64_t i = 0; i < 32; ++i) {
          const double wk = std::fabs(w[n * K + b * 32 + i]);
          err += wk * step * (0.5 + 1e-5);
          magnitude += wk * std::fabs(x[m * K + b * 32 + i]);
        }
      }
      bound[m * N + n] = err + 2e-5 * (1.0 + magnitude);
    }
  return bound;
}

// sum over k of |x[m, k] * w[n, k]| for every output: the scale of a dot product's rounding.
std::vector<double> product_magnitudes(const std::vector<double>& x, int64_t M, int64_t K,
                                       const std::vector<double>& w, int64_t N) {
  std::vector<double> magnitude(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t k = 0; k < K; ++k) magnitude[m * N + n] += std::fabs(w[n * K + k] * x[m * K + k]);
  return magnitude;
}

// bf16 weights on a CPU with bf16 dot products: the activations are rounded to bf16 (relative
// error at most 2^-8 each: 8 significant bits), plus float rounding of the sums.
std::vector<double> bf16_bound(const std::vector<double>& x, int64_t M, int64_t K, const std::vector<double>& w,
                               int64_t N) {
  std::vector<double> bound = product_magnitudes(x, M, K, w, N);
  for (double& b : bound) b = b * (1.0 / 256 + 1e-5) + 1e-5;
  return bound;
}

// f32 arithmetic over exact products: a chain of K roundings, at most K * 2^-24 of the sum of
// the products' magnitudes (the classic a-priori bound), for sums too long for a fixed
// tolerance.
std::vector<double> f32_sum_bound(const std::vector<double>& x, int64_t M, int64_t K, const std::vector<double>& w,
                                  int64_t N) {
  std::vector<double> bound = product_magnitudes(x, M, K, w, N);
  for (double& b : bound) b = b * (static_cast<double>(K + 1) * std::ldexp(1.0, -24)) + 1e-6;
  return bound;
}

bool bf16_dot(DType dtype, Isa isa) { return dtype == DType::kBF16 && rounds_bf16_activations(isa); }

struct Case {
  DType dtype;
  int64_t K;
  bool q8_quantize = true;
};
void PrintTo(const Case& c, std::ostream* os) { *os << dtype_name(c.dtype) << " K=" << c.K; }

class OptimizedLinear : public ::testing::TestWithParam<Case> {};

TEST_P(OptimizedLinear, MatchesReferenceForOddSizesAndThreadCounts) {
  const auto [dtype, K, q8_quantize] = GetParam();
  const bool int8_dot = dtype == DType::kQ8 && q8_quantize;
  uint32_t seed = static_cast<uint32_t>(K * 7 + static_cast<int>(dtype));
  // M = 14: a full 12-row tile and a partial one; M = 37: two AMX tiles of 16 rows (q8 on
  // avx512_amx) and 5 rows through the vector tiles; bf16 on avx512_amx runs the last 16 rows
  // as a third tile, and at M = 17 as the second tile of the first pair (overlapping rows
  // 1-15 of the first). K above a cache block of steps (f32 256,
  // f16 384 and bf16 192 with AVX-512) takes several blocks per output. f32 and f16 tiles read
  // the activation rows in place, except at K = 1024 (rows 4 KiB apart), where the call first
  // copies them to rows that spread over the L1 sets (linear.cpp).
  for (int64_t M : {1, 5, 14, 17, 37}) {
    for (int64_t N : {1, 3, 13, 67}) {
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << (with_bias ? " bias" : ""));
        auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, ++seed));
        auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, ++seed));
        auto b = Tensor::from_floats(DType::kF32, {N}, random_floats(N, ++seed));
        std::vector<TensorView> inputs{x.view(), w.view()};
        if (with_bias) inputs.push_back(b.view());
        const auto want = reference_linear(x.values(), M, K, w.values(), N, with_bias ? b.values() : std::vector<double>{});

        std::optional<Tensor> first_isa;
        for (Isa isa : simd_isas()) {
          SCOPED_TRACE(isa_label(isa));
          Tensor y1(DType::kF32, {M, N}), y3(DType::kF32, {M, N});
          ASSERT_TRUE(run(*registry(1, isa, q8_quantize), "linear", inputs, {y1.view()}).ok());
          auto status = run(*registry(3, isa, q8_quantize), "linear", inputs, {y3.view()});
          ASSERT_TRUE(status.ok()) << status.error().to_string();
          if (int8_dot) {
            EXPECT_TRUE(within_bounds(y1.values(), want, q8_bound(x.values(), M, K, w.values(), N)));
          } else if (bf16_dot(dtype, isa)) {
            EXPECT_TRUE(within_bounds(y1.values(), want, bf16_bound(x.values(), M, K, w.values(), N)));
          } else {
            EXPECT_TRUE(all_close(y1.values(), want, 1e-4));
          }
          EXPECT_TRUE(same_bytes(y1, y3)) << "threads=1 and threads=3 differ";
          // Every SIMD set runs the same per-output arithmetic over 16 lanes (one 512-bit or
          // two 256-bit registers; int8 block sums are exact), so the bits agree; bf16 dot
          // products (vdpbf16ps or AMX tiles) round the activations and are the one exception.
          if (bf16_dot(dtype, isa)) continue;
          if (first_isa) {
            EXPECT_TRUE(same_bytes(*first_isa, y1)) << "differs from " << isa_label(simd_isas().front());
          } else {
            first_isa = y1;
          }
        }
      }
    }
  }
}

TEST_P(OptimizedLinear, ScalarFallbackIsThePortableKernel) {
  const auto [dtype, K, q8_quantize] = GetParam();
  const int64_t M = 3, N = 19;
  auto x = Tensor::from_floats(DType::kF32, {1, M, K}, random_floats(M * K, 11));
  auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 12));
  auto b = Tensor::from_floats(DType::kF32, {N}, random_floats(N, 13));
  Tensor got(DType::kF32, {1, M, N}), portable(DType::kF32, {1, M, N});
  ASSERT_TRUE(run(*registry(4, Isa::kScalar, q8_quantize), "linear", {x.view(), w.view(), b.view()}, {got.view()}).ok());
  ASSERT_TRUE(run(*kernels::portable_kernel_registry(), "linear", {x.view(), w.view(), b.view()}, {portable.view()}).ok());
  EXPECT_TRUE(same_bytes(got, portable));
  EXPECT_TRUE(all_close(got.values(), reference_linear(x.values(), M, K, w.values(), N, b.values()), 1e-4));
}

INSTANTIATE_TEST_SUITE_P(
    WeightDtypes, OptimizedLinear,
    ::testing::Values(Case{DType::kF32, 1}, Case{DType::kF32, 7}, Case{DType::kF32, 17}, Case{DType::kF32, 37},
                      Case{DType::kF32, 100}, Case{DType::kF32, 768}, Case{DType::kF32, 1024}, Case{DType::kF16, 1},
                      Case{DType::kF16, 9}, Case{DType::kF16, 37}, Case{DType::kF16, 260}, Case{DType::kF16, 800},
                      Case{DType::kF16, 1024}, Case{DType::kBF16, 5},
                      Case{DType::kBF16, 37}, Case{DType::kBF16, 160}, Case{DType::kBF16, 401}, Case{DType::kQ8, 32}, Case{DType::kQ8, 96}, Case{DType::kQ8, 800},
                      Case{DType::kQ8, 32, false}, Case{DType::kQ8, 96, false}, Case{DType::kQ8, 800, false}),
    [](const auto& info) {
      std::ostringstream name;
      name << dtype_name(info.param.dtype) << "_K" << info.param.K
           << (info.param.dtype == DType::kQ8 ? (info.param.q8_quantize ? "_int8dot" : "_widened") : "");
      return name.str();
    });

TEST(OptimizedLinearThreads, ResultsDoNotDependOnTheThreadCount) {
  // N not a multiple of any chunk size, several rows, every dtype.
  const int64_t K = 160, N = 1001;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    for (int64_t M : {1, 3}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " M=" << M);
      auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 21));
      auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 22));
      for (Isa isa : simd_isas()) {
        SCOPED_TRACE(isa_label(isa));
        Tensor first(DType::kF32, {M, N});
        ASSERT_TRUE(run(*registry(1, isa), "linear", {x.view(), w.view()}, {first.view()}).ok());
        for (int threads : {2, 3, 7}) {
          Tensor y(DType::kF32, {M, N});
          ASSERT_TRUE(run(*registry(threads, isa), "linear", {x.view(), w.view()}, {y.view()}).ok());
          EXPECT_TRUE(same_bytes(first, y)) << "threads=" << threads;
        }
      }
    }
  }
}

TEST(OptimizedLinearThreads, DecodeShapeMatchesReference) {
  // A decode-sized layer: one row, wide K, many output rows over three threads.
  const int64_t K = 768, N = 2050;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = Tensor::from_floats(DType::kF32, {1, 1, K}, random_floats(K, 31));
    auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 32, -0.1f, 0.1f));
    const auto want = reference_linear(x.values(), 1, K, w.values(), N, {});
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor y(DType::kF32, {1, 1, N});
      ASSERT_TRUE(run(*registry(3, isa), "linear", {x.view(), w.view()}, {y.view()}).ok());
      if (dtype == DType::kQ8) {
        EXPECT_TRUE(within_bounds(y.values(), want, q8_bound(x.values(), 1, K, w.values(), N)));
        EXPECT_TRUE(all_close(y.values(), want, 2e-2));  // and the bound is not vacuous
      } else if (bf16_dot(dtype, isa)) {
        EXPECT_TRUE(within_bounds(y.values(), want, bf16_bound(x.values(), 1, K, w.values(), N)));
        EXPECT_TRUE(all_close(y.values(), want, 2e-2));
      } else {
        EXPECT_TRUE(all_close(y.values(), want, 1e-4));
      }
    }
  }
}

// Decode settings are hints: run `check` for every weight format, SIMD instruction set and
// thread count on one row of K = 768 against N = 2050 outputs (a partial last panel; f16 panels
// are interleaved in pairs). `check(x, w, decode)` gets `decode(configure)`, which runs the
// linear through a registry whose options `configure` has set (threads and ISA already).
template <typename Check>
void for_every_decode_case(Check check) {
  const int64_t K = 768, N = 2050;
  auto x = Tensor::from_floats(DType::kF32, {1, 1, K}, random_floats(K, 41));
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 42, -0.1f, 0.1f));
    for (Isa isa : simd_isas())
      for (int threads : {1, 3}) {
        SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << ", " << isa_label(isa) << ", " << threads
                                          << " threads");
        auto decode = [&](auto configure) {
          CpuKernelOptions options;
          options.threads = threads;
          options.isa = isa;
          configure(options);
          Tensor y(DType::kF32, {1, 1, N});
          EXPECT_TRUE(run(*optimized_kernel_registry(options), "linear", {x.view(), w.view()}, {y.view()}).ok());
          return y;
        };
        check(dtype, x, w, decode);
      }
  }
}

TEST(OptimizedLinearThreads, StreamPrefetchChangesNoBit) {
  // Any prefetch distance, even one far past the weights, gives the bits of none, with the CPU's
  // decode panels and with 4 side by side or apart (whose streams go on in different places).
  for_every_decode_case([](DType dtype, const Tensor& x, const Tensor& w, auto decode) {
    for (std::optional<DecodePanels> panels : {std::optional<DecodePanels>{}, std::optional{DecodePanels{4, 4, 4, 4, false}},
                                               std::optional{DecodePanels{4, 4, 4, 4, true}}}) {
      SCOPED_TRACE(panels ? (panels->apart ? "4 apart" : "4 side by side") : "the CPU's panels");
      auto with_prefetch = [&](size_t distance) {
        return decode([&](CpuKernelOptions& options) {
          options.stream_prefetch = StreamPrefetch{distance, distance, distance, distance};
          options.decode_panels = panels;
          EXPECT_EQ(resolve_cpu_kernel_options(options).stream_prefetch.for_dtype(dtype), distance);
        });
      };
      const Tensor none = with_prefetch(0);
      if (dtype == DType::kF32) {
        EXPECT_TRUE(all_close(none.values(), reference_linear(x.values(), 1, 768, w.values(), 2050, {}), 1e-4));
      }
      for (size_t distance : {size_t{64}, size_t{512}, size_t{4096}, size_t{8192}, size_t{1} << 30}) {
        const Tensor y = with_prefetch(distance);
        EXPECT_EQ(y.storage(), none.storage()) << distance;
      }
    }
  });
}

TEST(OptimizedLinearThreads, StreamPrefetchDefaultsToTheCpusChoice) {
  CpuKernelOptions options;
  options.isa = best_supported_isa();
  const StreamPrefetch chosen = default_stream_prefetch(*options.isa);
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    const size_t distance = chosen.for_dtype(dtype);
    EXPECT_TRUE(distance == 0 || distance == 512 || distance == 4096 || distance == 8192)
        << dtype_name(dtype) << " " << distance;
  }
  EXPECT_EQ(chosen.for_dtype(DType::kI64), 0u);
  EXPECT_EQ(resolve_cpu_kernel_options(options).stream_prefetch, options.isa == Isa::kScalar ? StreamPrefetch{} : chosen);
  options.isa = Isa::kScalar;  // the portable kernels prefetch nothing
  options.stream_prefetch = StreamPrefetch{4096, 4096, 4096, 4096};
  EXPECT_EQ(resolve_cpu_kernel_options(options).stream_prefetch, StreamPrefetch{});
}

TEST(OptimizedLinearThreads, DecodePanelsChangeNoBit) {
  // How many panels a decode step reads in one pass, and whether they lie side by side or apart,
  // changes which chains share a pass, never a chain: every count gives the bits of one panel at
  // a time (f16: one pair). N = 2050 is 128 whole panels and a partial one, so ranges end in
  // tiles of 4, 2 and 1 panels (and with 3 threads, pieces of several sizes are split apart).
  for_every_decode_case([](DType dtype, const Tensor& x, const Tensor& w, auto decode) {
    auto with_panels = [&](int panels, bool apart) {
      return decode([&](CpuKernelOptions& options) {
        options.decode_panels = DecodePanels{panels, panels, panels, panels, apart};
      });
    };
    const Tensor one = with_panels(1, false);
    if (dtype == DType::kF32) {
      EXPECT_TRUE(all_close(one.values(), reference_linear(x.values(), 1, 768, w.values(), 2050, {}), 1e-4));
    }
    for (int panels : {2, 4})
      for (bool apart : {false, true})
        EXPECT_EQ(with_panels(panels, apart).storage(), one.storage()) << panels << (apart ? " apart" : "");
  });
}

TEST(OptimizedLinearThreads, DecodePanelsDefaultToTheCpusChoiceAndAreLowered) {
  const DecodePanels chosen = default_decode_panels(best_supported_isa());
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    const int panels = chosen.for_dtype(dtype);
    EXPECT_TRUE(panels == 1 || panels == 2 || panels == 4) << dtype_name(dtype) << " " << panels;
  }
  EXPECT_GE(chosen.f16, 2);  // f16 panels are stored in interleaved pairs
  EXPECT_EQ(chosen.for_dtype(DType::kI64), 1);
  CpuKernelOptions options;
  options.isa = best_supported_isa();
  if (options.isa != Isa::kScalar) {
    DecodePanels want = chosen;
    if (options.isa == Isa::kAvx512Amx) want.bf16 = std::max(want.bf16, 2);  // AMX bf16 tiles take pairs
    EXPECT_EQ(resolve_cpu_kernel_options(options).decode_panels, want);
  }
  if (isa_supported(Isa::kAvx512Amx)) {
    options.isa = Isa::kAvx512Amx;
    options.decode_panels = DecodePanels{1, 2, 1, 1};
    EXPECT_EQ(resolve_cpu_kernel_options(options).decode_panels, (DecodePanels{1, 2, 2, 1}));
    options.decode_panels.reset();
  }
  // The defaults are the chosen unit's (the 256-bit units have their own), not the best one's.
  options.isa = Isa::kAvx2;
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(resolve_cpu_kernel_options(options).decode_panels, default_decode_panels(Isa::kAvx2));
    EXPECT_EQ(resolve_cpu_kernel_options(options).stream_prefetch, default_stream_prefetch(Isa::kAvx2));
    EXPECT_GE(default_decode_panels(Isa::kAvx2).f16, 2);
  }
  // Counts the kernels lack go to the one below; f16 never below a pair.
  options.decode_panels = DecodePanels{3, 1, 0, 9};
  if (isa_supported(Isa::kAvx2)) {
    EXPECT_EQ(resolve_cpu_kernel_options(options).decode_panels, (DecodePanels{2, 2, 1, 4}));
  }
  options.isa = Isa::kScalar;  // the portable kernels read one row at a time anyway
  EXPECT_EQ(resolve_cpu_kernel_options(options).decode_panels, DecodePanels{});
}

TEST(OptimizedLinearQ8, NonFiniteActivationsPropagateLikeThePortableKernel) {
  const int64_t M = 3, K = 64, N = 9;
  auto values = random_floats(M * K, 41);
  values[5] = std::numeric_limits<float>::infinity();
  values[K + 40] = std::numeric_limits<float>::quiet_NaN();
  auto x = Tensor::from_floats(DType::kF32, {M, K}, values);
  auto w = Tensor::from_floats(DType::kQ8, {N, K}, random_floats(N * K, 42));
  Tensor got(DType::kF32, {M, N}), want(DType::kF32, {M, N});
  ASSERT_TRUE(run(*registry(2), "linear", {x.view(), w.view()}, {got.view()}).ok());
  ASSERT_TRUE(run(*kernels::portable_kernel_registry(), "linear", {x.view(), w.view()}, {want.view()}).ok());
  const auto g = got.floats(), e = want.floats();
  for (size_t i = 0; i < g.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(std::isnan(g[i]), std::isnan(e[i]));
    if (std::isinf(e[i])) {
      EXPECT_EQ(g[i], e[i]);
    }
    if (std::isfinite(e[i])) {
      EXPECT_NEAR(g[i], e[i], 1e-4 * (1 + std::fabs(e[i])));
    }
  }
  // The finite third row still matches.
  EXPECT_TRUE(std::isfinite(g[2 * N]));
}

TEST(OptimizedLinearQ8, ExtremeWeightCodesDoNotSaturate) {
  // Every weight code -128 or 127 (a valid q8 file can hold -128) against activations at the
  // extremes of their blocks: the 16-bit pair sums of the int8 path must not saturate.
  const int64_t K = 64, N = 4;
  Tensor w(DType::kQ8, {N, K});
  for (int64_t n = 0; n < N; ++n)
    for (int64_t b = 0; b < K / 32; ++b) {
      uint8_t* block = w.bytes() + (n * (K / 32) + b) * kQ8BlockBytes;
      const uint16_t scale = f32_to_f16(0.01f);
      std::memcpy(block, &scale, 2);
      for (int i = 0; i < 32; ++i) block[2 + i] = static_cast<uint8_t>(n % 2 == 0 ? 0x80 : 0x7f);
    }
  // Every pair of products is 2 * 128 * 127 for the even rows: the largest the int8 path sees.
  std::vector<float> xs(K, -1.0f);
  // Several rows too: the prefill kernels group weight rows differently from decode, and 19
  // rows take an AMX tile of 16 (avx512_amx) besides 3 rows of vector tiles.
  auto x = Tensor::from_floats(DType::kF32, {1, K}, xs);
  constexpr int64_t kRows = 19;
  std::vector<float> xs3;
  for (int i = 0; i < kRows; ++i) xs3.insert(xs3.end(), xs.begin(), xs.end());
  auto x3 = Tensor::from_floats(DType::kF32, {kRows, K}, xs3);
  for (Isa isa : simd_isas()) {
    SCOPED_TRACE(isa_label(isa));
    Tensor y(DType::kF32, {1, N}), y3(DType::kF32, {kRows, N});
    ASSERT_TRUE(run(*registry(2, isa), "linear", {x.view(), w.view()}, {y.view()}).ok());
    ASSERT_TRUE(run(*registry(2, isa), "linear", {x3.view(), w.view()}, {y3.view()}).ok());
    // Activations +-1 quantize exactly, so the int8 result is exact up to float rounding.
    const auto want = reference_linear(x.values(), 1, K, w.values(), N, {});
    EXPECT_TRUE(all_close(y.values(), want, 1e-5));
    EXPECT_TRUE(all_close(y3.values(), reference_linear(x3.values(), kRows, K, w.values(), N, {}), 1e-5));
  }
}

TEST(OptimizedLinear, EmptyAndRankOneShapes) {
  const int64_t K = 40, N = 7;
  auto w = Tensor::from_floats(DType::kF32, {N, K}, random_floats(N * K, 51));
  auto x = Tensor::from_floats(DType::kF32, {K}, random_floats(K, 52));
  Tensor y(DType::kF32, {N});
  ASSERT_TRUE(run(*registry(3), "linear", {x.view(), w.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), reference_linear(x.values(), 1, K, w.values(), N, {}), 1e-5));

  Tensor x0(DType::kF32, {0, K}), y0(DType::kF32, {0, N});
  EXPECT_TRUE(run(*registry(3), "linear", {x0.view(), w.view()}, {y0.view()}).ok());

  // K = 0: the output is the bias.
  Tensor xk(DType::kF32, {2, 0}), wk(DType::kF32, {N, 0}), yk(DType::kF32, {2, N});
  auto b = Tensor::from_floats(DType::kF32, {N}, random_floats(N, 53));
  ASSERT_TRUE(run(*registry(3), "linear", {xk.view(), wk.view(), b.view()}, {yk.view()}).ok());
  const auto bias = b.values();
  auto got = yk.values();
  for (int64_t n = 0; n < N; ++n) {
    EXPECT_EQ(got[n], bias[n]);
    EXPECT_EQ(got[N + n], bias[n]);
  }
}

TEST(OptimizedLinearRows, ARowGivesTheSameBitsAloneAndInABatch) {
  // What makes a token's logits independent of prefill chunking: the blocked multiply over many
  // rows and the one-row stream compute every output with the same operations. Sizes cover
  // partial register tiles (rows), partial panels (N), several cache blocks of K, (35 rows)
  // q8 rows through AMX tiles beside rows through vector tiles, and (17 and 50 rows) bf16 AMX
  // tiles of a pair that overlap.
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    for (auto [M, K, N] :
         {std::tuple<int64_t, int64_t, int64_t>{13, 1088, 83}, {7, 96, 1000}, {2, 33 * 32, 17}, {14, 2048, 40},
          {35, 33 * 32, 50}, {17, 64, 40}, {50, 96, 33}}) {
      // Odd K for the float formats, except K = 2048: rows 8 KiB apart, which f32 and f16
      // calls of several rows read from a copy of the activations.
      if (dtype != DType::kQ8 && K % 2 == 0 && K != 2048) K += 1;
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " M=" << M << " K=" << K << " N=" << N);
      auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 61, -3, 3));
      auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 62));
      auto b = Tensor::from_floats(DType::kF32, {N}, random_floats(N, 63));
      for (Isa isa : simd_isas()) {
        SCOPED_TRACE(isa_label(isa));
        for (int threads : {1, 2}) {
          Tensor batch(DType::kF32, {M, N});
          ASSERT_TRUE(run(*registry(threads, isa), "linear", {x.view(), w.view(), b.view()}, {batch.view()}).ok());
          const auto all = batch.floats();
          const auto xs = x.floats();
          for (int64_t m = 0; m < M; ++m) {
            auto row = Tensor::from_floats(DType::kF32, {1, K}, std::vector<float>(xs.begin() + m * K, xs.begin() + (m + 1) * K));
            Tensor alone(DType::kF32, {1, N});
            ASSERT_TRUE(run(*registry(threads, isa), "linear", {row.view(), w.view(), b.view()}, {alone.view()}).ok());
            const auto single = alone.floats();
            ASSERT_EQ(std::memcmp(single.data(), all.data() + m * N, N * sizeof(float)), 0)
                << "row " << m << " threads " << threads;
          }
        }
      }
    }
  }
}

TEST(OptimizedLinearRows, ACallOfManyLongRowsGivesEachRowTheBitsOfTheRowAlone) {
  // 300 rows of K = 2048: 2.4 MiB of f32 activations, which the 512-bit f32 and f16 kernels
  // split into blocks of rows at half the L2 and at least 128 rows (with an L2 under 4.8 MiB:
  // 132, 132 and 36 rows), and 1.2 MiB of
  // bf16 activation pairs, which the AMX bf16 kernel splits into blocks of 10 and 9 row tiles
  // (the last tile overlaps the one before). Every row is run alone as well, so the rows on
  // both sides of each boundary are among them; the call is checked against the float64
  // reference too.
  const int64_t M = 300, K = 2048, N = 40;
  auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 91, -3, 3));
  auto b = Tensor::from_floats(DType::kF32, {N}, random_floats(N, 93));
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 92));
    const auto want = reference_linear(x.values(), M, K, w.values(), N, b.values());
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      Tensor batch(DType::kF32, {M, N});
      ASSERT_TRUE(run(*registry(2, isa), "linear", {x.view(), w.view(), b.view()}, {batch.view()}).ok());
      const auto bound = bf16_dot(dtype, isa) ? bf16_bound(x.values(), M, K, w.values(), N)
                                              : f32_sum_bound(x.values(), M, K, w.values(), N);
      EXPECT_TRUE(within_bounds(batch.values(), want, bound));
      const auto all = batch.floats();
      const auto xs = x.floats();
      for (int64_t m = 0; m < M; ++m) {
        auto row = Tensor::from_floats(DType::kF32, {1, K}, std::vector<float>(xs.begin() + m * K, xs.begin() + (m + 1) * K));
        Tensor alone(DType::kF32, {1, N});
        ASSERT_TRUE(run(*registry(1, isa), "linear", {row.view(), w.view(), b.view()}, {alone.view()}).ok());
        EXPECT_EQ(std::memcmp(alone.floats().data(), all.data() + m * N, N * sizeof(float)), 0) << "row " << m;
      }
    }
  }
}

TEST(OptimizedLinear, AWeightThatIsNotAConstantRunsThePortableKernel) {
  // A method prepares its kernels with the bytes of constants only; a weight computed at run
  // time is not repacked, and the call falls back to the portable kernel.
  const int64_t M = 2, K = 64, N = 5;
  auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 71));
  auto w = Tensor::from_floats(DType::kQ8, {N, K}, random_floats(N * K, 72));
  std::vector<TensorView> shapes{x.view(), w.view()};
  shapes[0].data = shapes[1].data = nullptr;
  Tensor y(DType::kF32, {M, N}), want(DType::kF32, {M, N});
  std::vector<TensorView> outputs{y.view()};
  outputs[0].data = nullptr;
  auto bound = runtime::BoundKernel::prepare(*registry(2), "linear", {}, shapes, outputs);
  ASSERT_TRUE(bound.ok()) << bound.error().to_string();
  std::vector<TensorView> out{y.view()};
  ASSERT_TRUE(bound->run(std::vector<TensorView>{x.view(), w.view()}, out, {}).ok());
  ASSERT_TRUE(run(*kernels::portable_kernel_registry(), "linear", {x.view(), w.view()}, {want.view()}).ok());
  EXPECT_TRUE(same_bytes(y, want));
}

TEST(OptimizedLinear, ACallNeverAllocatesScratchItWasNotGiven) {
  // The scratch a call needs is reserved at load; a call given less reports an error. q8
  // weights take quantized activations; f32 weights at K = 1024 a copy of the activation rows.
  const int64_t M = 4, N = 8;
  for (auto [dtype, K] : {std::pair{DType::kQ8, int64_t{64}}, std::pair{DType::kF32, int64_t{1024}}}) {
    SCOPED_TRACE(dtype_name(dtype));
    auto x = Tensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 81));
    auto w = Tensor::from_floats(dtype, {N, K}, random_floats(N * K, 82));
    Tensor y(DType::kF32, {M, N});
    std::vector<TensorView> inputs{x.view(), w.view()}, outputs{y.view()};
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      auto bound = runtime::BoundKernel::prepare(*registry(2, isa), "linear", {}, inputs, outputs);
      ASSERT_TRUE(bound.ok());
      ASSERT_GE(bound->scratch_bytes(), dtype == DType::kQ8 ? size_t{1} : M * K * sizeof(float));
      std::vector<uint8_t> scratch(bound->scratch_bytes());
      EXPECT_TRUE(bound->run(inputs, outputs, {scratch.data(), scratch.size() - 64}).error().message().find("scratch") !=
                  std::string::npos);
      EXPECT_TRUE(bound->run(inputs, outputs, scratch).ok());
    }
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
