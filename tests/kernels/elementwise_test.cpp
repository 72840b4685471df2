// silu, silu_mul, gelu, mul, add (with suffix broadcast) and argmax.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

std::vector<double> map(const std::vector<double>& x, double (*f)(double)) {
  std::vector<double> out;
  for (double v : x) out.push_back(f(v));
  return out;
}

TEST(Activation, SiluAndBothGelus) {
  auto xs = random_floats(37, 70, -8.0f, 8.0f);
  xs.push_back(-100.0f);  // exp overflow territory
  xs.push_back(100.0f);
  xs.push_back(0.0f);
  auto x = HostTensor::from_floats(DType::kF32, {2, 20}, xs);
  HostTensor y(DType::kF32, {2, 20});
  ASSERT_TRUE(run_kernel("silu", {x.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), map(x.values(), ref::silu), 1e-6));
  ASSERT_TRUE(run_kernel("gelu", {x.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), map(x.values(), ref::gelu_erf), 1e-6));
  ASSERT_TRUE(run_kernel("gelu", {x.view()}, {y.view()}, {{"approximate", std::string("none")}}).ok());
  EXPECT_TRUE(all_close(y.values(), map(x.values(), ref::gelu_erf), 1e-6));
  ASSERT_TRUE(run_kernel("gelu", {x.view()}, {y.view()}, {{"approximate", std::string("tanh")}}).ok());
  EXPECT_TRUE(all_close(y.values(), map(x.values(), ref::gelu_tanh), 1e-6));
  // The approximations differ measurably, so the attribute is really honored.
  EXPECT_FALSE(all_close(map(x.values(), ref::gelu_tanh), map(x.values(), ref::gelu_erf), 1e-6));
}

TEST(Activation, InPlaceAndErrors) {
  auto x = HostTensor::from_floats(DType::kF32, {5}, random_floats(5, 71));
  const auto before = x.values();
  ASSERT_TRUE(run_kernel("silu", {x.view()}, {x.view()}).ok());
  EXPECT_TRUE(all_close(x.values(), map(before, ref::silu), 1e-6));
  HostTensor y(DType::kF32, {5});
  EXPECT_TRUE(fails_with(run_kernel("gelu", {x.view()}, {y.view()}, {{"approximate", std::string("fast")}}),
                         ErrorCode::kInvalidArgument, {"gelu", "approximate 'fast'"}));
  HostTensor xh(DType::kF16, {5});
  EXPECT_TRUE(fails_with(run_kernel("silu", {xh.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"silu", "x has dtype f16"}));
  HostTensor y6(DType::kF32, {6});
  EXPECT_TRUE(fails_with(run_kernel("gelu", {x.view()}, {y6.view()}), ErrorCode::kInvalidArgument,
                         {"gelu", "output has shape [6]"}));
}

TEST(Activation, SiluMulIsTheGatedProduct) {
  auto gates = random_floats(40, 73, -8.0f, 8.0f);
  gates[3] = -100.0f;  // exp overflow territory: silu is -0 there
  gates[4] = 100.0f;
  auto gate = HostTensor::from_floats(DType::kF32, {2, 20}, gates);
  auto up = HostTensor::from_floats(DType::kF32, {2, 20}, random_floats(40, 74, -3.0f, 3.0f));
  std::vector<double> want;
  for (size_t i = 0; i < gate.values().size(); ++i) want.push_back(ref::silu(gate.values()[i]) * up.values()[i]);
  HostTensor y(DType::kF32, {2, 20});
  ASSERT_TRUE(run_kernel("silu_mul", {gate.view(), up.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), want, 1e-6));
  // Bit for bit the silu kernel's value times up, as the unfused ops compute it.
  HostTensor s(DType::kF32, {2, 20}), product(DType::kF32, {2, 20});
  ASSERT_TRUE(run_kernel("silu", {gate.view()}, {s.view()}).ok());
  ASSERT_TRUE(run_kernel("mul", {s.view(), up.view()}, {product.view()}).ok());
  EXPECT_EQ(y.values(), product.values());
  // In place over either input.
  ASSERT_TRUE(run_kernel("silu_mul", {gate.view(), up.view()}, {up.view()}).ok());
  EXPECT_EQ(up.values(), product.values());
  // The shapes must match (no broadcast), and the operands be f32.
  HostTensor short_up(DType::kF32, {20});
  EXPECT_TRUE(fails_with(run_kernel("silu_mul", {gate.view(), short_up.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"silu_mul", "up has shape [20]"}));
  HostTensor gate16(DType::kF16, {2, 20});
  EXPECT_TRUE(fails_with(run_kernel("silu_mul", {gate16.view(), up.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"silu_mul", "gate has dtype f16"}));
}

TEST(Binary, SameShapeAndSuffixBroadcast) {
  const std::vector<int64_t> a_dims{2, 3, 5};
  auto a = HostTensor::from_floats(DType::kF32, {2, 3, 5}, random_floats(30, 72));
  const std::vector<Shape> b_shapes{{2, 3, 5}, {3, 5}, {5}, {}};
  for (const Shape& bs : b_shapes) {
    auto b = HostTensor::from_floats(DType::kF32, bs, random_floats(static_cast<size_t>(bs.numel()), 73));
    const auto av = a.values(), bv = b.values();
    std::vector<double> sum(av.size()), prod(av.size());
    // The reference broadcasts by coordinates: b's index is a's flat index modulo b's size
    // only because b's dims are a suffix; compute it from the trailing coordinates instead.
    for (size_t i = 0; i < av.size(); ++i) {
      int64_t rem = static_cast<int64_t>(i), bi = 0, stride = 1;
      for (int d = 2; d >= 3 - bs.rank(); --d) {
        bi += (rem % a_dims[d]) * stride;
        stride *= a_dims[d];
        rem /= a_dims[d];
      }
      sum[i] = av[i] + bv[bi];
      prod[i] = av[i] * bv[bi];
    }
    HostTensor y(DType::kF32, {2, 3, 5});
    ASSERT_TRUE(run_kernel("add", {a.view(), b.view()}, {y.view()}).ok());
    EXPECT_TRUE(all_close(y.values(), sum, 1e-7)) << bs.to_string();
    ASSERT_TRUE(run_kernel("mul", {a.view(), b.view()}, {y.view()}).ok());
    EXPECT_TRUE(all_close(y.values(), prod, 1e-7)) << bs.to_string();
  }
}

TEST(Binary, InPlaceResidualAdd) {
  auto a = HostTensor::from_floats(DType::kF32, {1, 3, 4}, random_floats(12, 74));
  auto b = HostTensor::from_floats(DType::kF32, {1, 3, 4}, random_floats(12, 75));
  const auto av = a.values(), bv = b.values();
  ASSERT_TRUE(run_kernel("add", {a.view(), b.view()}, {a.view()}).ok());
  std::vector<double> want(12);
  for (size_t i = 0; i < 12; ++i) want[i] = av[i] + bv[i];
  EXPECT_TRUE(all_close(a.values(), want, 1e-7));
}

TEST(Binary, RejectsNonSuffixShapes) {
  HostTensor a(DType::kF32, {2, 3, 4});
  HostTensor b(DType::kF32, {2, 3});
  HostTensor y(DType::kF32, {2, 3, 4});
  EXPECT_TRUE(fails_with(run_kernel("mul", {a.view(), b.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"mul", "b has shape [2, 3]", "suffix"}));
  HostTensor big(DType::kF32, {1, 2, 3, 4});
  EXPECT_TRUE(fails_with(run_kernel("add", {a.view(), big.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"add", "b has shape [1, 2, 3, 4]"}));
  HostTensor bi(DType::kI64, {4});
  EXPECT_TRUE(fails_with(run_kernel("add", {a.view(), bi.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"add", "b has dtype i64"}));
  // A broadcast b cannot also be the output: it is re-read for every row.
  HostTensor row(DType::kF32, {4});
  HostTensor a1(DType::kF32, {1, 4});
  EXPECT_TRUE(fails_with(run_kernel("add", {a1.view(), row.view()},
                                    {TensorView::contiguous(DType::kF32, {1, 4}, row.view().data)}),
                         ErrorCode::kInvalidArgument, {"add", "output overlaps", "b"}));
}

TEST(Argmax, FirstMaximumPerRow) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto x = HostTensor::from_floats(DType::kF32, {1, 4, 5},
                                   {1, 3, 2, 3, 0,           // tie: first wins
                                    -5, -4, -3, -2, -1,      // last
                                    nan, 0, 7, nan, 7,       // NaN skipped, tie
                                    nan, nan, nan, nan, nan});
  HostTensor y(DType::kI64, {1, 4});
  ASSERT_TRUE(run_kernel("argmax", {x.view()}, {y.view()}).ok());
  EXPECT_EQ(y.ints(), (std::vector<int64_t>{1, 4, 2, 0}));
}

TEST(Argmax, MatchesScanOnRandomRows) {
  const int64_t rows = 7, N = 101;
  auto x = HostTensor::from_floats(DType::kF32, {rows, N}, random_floats(rows * N, 76));
  HostTensor y(DType::kI64, {rows});
  ASSERT_TRUE(run_kernel("argmax", {x.view()}, {y.view()}).ok());
  const auto xv = x.values();
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t i = 0; i < N; ++i)
      if (xv[r * N + i] > xv[r * N + best]) best = i;
    EXPECT_EQ(y.ints()[r], best);
  }
}

TEST(Argmax, RejectsBadOutput) {
  HostTensor x(DType::kF32, {2, 5});
  HostTensor yf(DType::kF32, {2});
  EXPECT_TRUE(fails_with(run_kernel("argmax", {x.view()}, {yf.view()}), ErrorCode::kInvalidArgument,
                         {"argmax", "output has dtype f32, expected i64"}));
  HostTensor y(DType::kI64, {2, 1});
  EXPECT_TRUE(fails_with(run_kernel("argmax", {x.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"argmax", "output has shape [2, 1], expected [2]"}));
  HostTensor empty(DType::kF32, {2, 0});
  HostTensor y2(DType::kI64, {2});
  EXPECT_TRUE(fails_with(run_kernel("argmax", {empty.view()}, {y2.view()}), ErrorCode::kInvalidArgument,
                         {"argmax", "empty last axis"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
