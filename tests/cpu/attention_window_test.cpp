// The optimized attention honours the sliding `window` attribute exactly as the portable kernel
// (the oracle) does, and both match a float64 windowed reference.
#include <gtest/gtest.h>

#include <cmath>

#include "cpu/cpu_test_util.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::testing {
namespace {

// Query t sees slots s with positions[t] - window < s <= positions[t].
std::vector<double> windowed_attention(const std::vector<double>& q, const std::vector<double>& k,
                                       const std::vector<double>& v, int64_t Hq, int64_t Hkv, int64_t T, int64_t C,
                                       int64_t Dh, const std::vector<int64_t>& positions, int64_t window, double scale) {
  std::vector<double> out(q.size(), 0.0);
  for (int64_t h = 0; h < Hq; ++h)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t kv = (h / (Hq / Hkv)) * C * Dh, qo = (h * T + t) * Dh;
      std::vector<double> weights;
      std::vector<int64_t> slots;
      for (int64_t s = 0; s < C; ++s) {
        if (s > positions[t] || s <= positions[t] - window) continue;
        double dot = 0;
        for (int64_t d = 0; d < Dh; ++d) dot += q[qo + d] * k[kv + s * Dh + d];
        weights.push_back(dot * scale);
        slots.push_back(s);
      }
      double max = -INFINITY, sum = 0;
      for (double w : weights) max = std::max(max, w);
      for (double& w : weights) sum += (w = std::exp(w - max));
      for (size_t i = 0; i < slots.size(); ++i)
        for (int64_t d = 0; d < Dh; ++d) out[qo + d] += weights[i] / sum * v[kv + slots[i] * Dh + d];
    }
  return out;
}

TEST(OptimizedAttentionWindow, MatchesReferenceAndPortableKernel) {
  const int64_t Hq = 4, Hkv = 2, T = 5, C = 40, Dh = 24, window = 6;
  const std::vector<int64_t> positions{20, 21, 22, 23, 24};
  auto q = Tensor::from_floats(DType::kF32, {1, Hq, T, Dh}, random_floats(Hq * T * Dh, 11, -2, 2));
  auto k = Tensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, random_floats(Hkv * C * Dh, 12, -2, 2));
  auto v = Tensor::from_floats(DType::kF32, {1, Hkv, C, Dh}, random_floats(Hkv * C * Dh, 13));
  auto pos = Tensor::from_ints({T}, positions);
  const double scale = 0.3;
  const program::Attrs attrs{{"scale", scale}, {"window", window}};
  CpuKernelOptions options;
  options.threads = 2;
  auto optimized = optimized_kernel_registry(options);
  Tensor got(DType::kF32, q.shape()), portable(DType::kF32, q.shape());
  ASSERT_TRUE(run(*optimized, "attention", {q.view(), k.view(), v.view(), pos.view()}, {got.view()}, attrs).ok());
  ASSERT_TRUE(run(*kernels::portable_kernel_registry(), "attention", {q.view(), k.view(), v.view(), pos.view()},
                  {portable.view()}, attrs)
                  .ok());
  const auto want = windowed_attention(q.values(), k.values(), v.values(), Hq, Hkv, T, C, Dh, positions, window,
                                       static_cast<float>(scale));
  EXPECT_TRUE(all_close(got.values(), want, 1e-5));
  EXPECT_TRUE(all_close(portable.values(), want, 1e-5));
}

}  // namespace
}  // namespace kestrel::cpu::testing
