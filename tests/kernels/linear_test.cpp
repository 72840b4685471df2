// linear and matmul against the float64 reference.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

struct LinearCase {
  DType weight_dtype;
  int64_t K;
  bool bias;
};
void PrintTo(const LinearCase& c, std::ostream* os) {
  *os << dtype_name(c.weight_dtype) << " K=" << c.K << (c.bias ? " with bias" : "");
}

class LinearTest : public ::testing::TestWithParam<LinearCase> {};

TEST_P(LinearTest, MatchesReferenceOnDequantizedWeights) {
  const auto [dtype, K, with_bias] = GetParam();
  const int64_t T = 5, N = 13;
  auto x = HostTensor::from_floats(DType::kF32, {1, T, K}, random_floats(T * K, 1));
  auto w = HostTensor::from_floats(dtype, {N, K}, random_floats(N * K, 2));
  auto b = HostTensor::from_floats(DType::kF32, {N}, random_floats(N, 3));
  HostTensor y(DType::kF32, {1, T, N});
  std::vector<TensorView> inputs{x.view(), w.view()};
  if (with_bias) inputs.push_back(b.view());
  ASSERT_TRUE(run_kernel("linear", inputs, {y.view()}).ok());
  const auto want = ref::linear(x.values(), T, K, w.values(), N, with_bias ? b.values() : ref::Vec{});
  EXPECT_TRUE(all_close(y.values(), want, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(
    WeightDtypes, LinearTest,
    ::testing::Values(LinearCase{DType::kF32, 37, false}, LinearCase{DType::kF32, 37, true},
                      LinearCase{DType::kF16, 37, false}, LinearCase{DType::kF16, 37, true},
                      LinearCase{DType::kBF16, 37, true}, LinearCase{DType::kQ8, 64, false},
                      LinearCase{DType::kQ8, 96, true}, LinearCase{DType::kF32, 1, true}),
    [](const auto& info) {
      return std::string(dtype_name(info.param.weight_dtype)) + "_K" + std::to_string(info.param.K) +
             (info.param.bias ? "_bias" : "");
    });

TEST(Linear, DecodeRowAndRankOneInput) {
  const int64_t K = 40, N = 7;
  auto w = HostTensor::from_floats(DType::kF32, {N, K}, random_floats(N * K, 4));
  auto x = HostTensor::from_floats(DType::kF32, {K}, random_floats(K, 5));
  HostTensor y(DType::kF32, {N});
  ASSERT_TRUE(run_kernel("linear", {x.view(), w.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), ref::linear(x.values(), 1, K, w.values(), N, {}), 1e-5));
}

TEST(Linear, WideRowsStayAccurate) {
  const int64_t K = 1024, N = 3, M = 2;
  auto x = HostTensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 6));
  auto w = HostTensor::from_floats(DType::kQ8, {N, K}, random_floats(N * K, 7));
  HostTensor y(DType::kF32, {M, N});
  ASSERT_TRUE(run_kernel("linear", {x.view(), w.view()}, {y.view()}).ok());
  EXPECT_TRUE(all_close(y.values(), ref::linear(x.values(), M, K, w.values(), N, {}), 1e-5));
}

TEST(Linear, KMismatchNamesBothSides) {
  HostTensor x(DType::kF32, {2, 64});
  HostTensor w(DType::kF32, {8, 48});
  HostTensor y(DType::kF32, {2, 8});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear: weight has K=48 but x has K=64"}));
}

TEST(Linear, RejectsBadDtypesShapesAndCounts) {
  HostTensor x(DType::kF32, {2, 32});
  HostTensor w(DType::kF32, {8, 32});
  HostTensor y(DType::kF32, {2, 8});
  HostTensor wi(DType::kI64, {8, 32});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), wi.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "weight", "i64"}));
  HostTensor xh(DType::kF16, {2, 32});
  EXPECT_TRUE(fails_with(run_kernel("linear", {xh.view(), w.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "x has dtype f16"}));
  HostTensor bias(DType::kF32, {9});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view(), bias.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "bias", "[9]"}));
  HostTensor y_bad(DType::kF32, {2, 9});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view()}, {y_bad.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "output", "[2, 9]", "[2, 8]"}));
  HostTensor y_i(DType::kI64, {2, 8});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view()}, {y_i.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "output", "i64"}));
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view()}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"linear", "expected 2 to 3 inputs, got 1"}));
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view()}, {}), ErrorCode::kInvalidArgument,
                         {"linear", "expected 1 output, got 0"}));
  HostTensor w3(DType::kF32, {1, 8, 32});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w3.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "weight has rank 3"}));
}

TEST(Linear, RejectsQ8WeightWithPartialBlocks) {
  HostTensor x(DType::kF32, {2, 37});
  TensorView w = TensorView::contiguous(DType::kQ8, {4, 37}, x.view().data);
  HostTensor y(DType::kF32, {2, 4});
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w}, {y.view()}), ErrorCode::kInvalidArgument,
                         {"linear", "weight", "multiple of 32"}));
}

TEST(Linear, RejectsNonContiguousAndOverlappingOutput) {
  HostTensor x(DType::kF32, {4, 4});
  HostTensor w(DType::kF32, {4, 4});
  HostTensor y(DType::kF32, {4, 4});
  TensorView xt = x.view();
  xt.strides = Shape{1, 4};
  EXPECT_TRUE(fails_with(run_kernel("linear", {xt, w.view()}, {y.view()}), ErrorCode::kUnsupported,
                         {"linear", "x is not contiguous"}));
  EXPECT_TRUE(fails_with(run_kernel("linear", {x.view(), w.view()}, {x.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "output overlaps", "x"}));
  TensorView null_x = x.view();
  null_x.data = nullptr;
  EXPECT_TRUE(fails_with(run_kernel("linear", {null_x, w.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"linear", "x has no data"}));
}

TEST(Matmul, BatchedMatchesReference) {
  const int64_t M = 5, K = 7, N = 4;
  auto a = HostTensor::from_floats(DType::kF32, {2, 3, M, K}, random_floats(6 * M * K, 8));
  auto b = HostTensor::from_floats(DType::kF32, {2, 3, K, N}, random_floats(6 * K * N, 9));
  HostTensor c(DType::kF32, {2, 3, M, N});
  ASSERT_TRUE(run_kernel("matmul", {a.view(), b.view()}, {c.view()}).ok());
  EXPECT_TRUE(all_close(c.values(), ref::matmul(a.values(), b.values(), 6, M, K, N), 1e-5));
}

TEST(Matmul, PlainMatrices) {
  const int64_t M = 1, K = 13, N = 9;
  auto a = HostTensor::from_floats(DType::kF32, {M, K}, random_floats(M * K, 10));
  auto b = HostTensor::from_floats(DType::kF32, {K, N}, random_floats(K * N, 11));
  HostTensor c(DType::kF32, {M, N});
  ASSERT_TRUE(run_kernel("matmul", {a.view(), b.view()}, {c.view()}).ok());
  EXPECT_TRUE(all_close(c.values(), ref::matmul(a.values(), b.values(), 1, M, K, N), 1e-5));
}

TEST(Matmul, RejectsMismatchedDims) {
  HostTensor a(DType::kF32, {2, 3, 4});
  HostTensor b(DType::kF32, {2, 5, 6});
  HostTensor c(DType::kF32, {2, 3, 6});
  EXPECT_TRUE(fails_with(run_kernel("matmul", {a.view(), b.view()}, {c.view()}),
                         ErrorCode::kInvalidArgument, {"matmul: b has K=5 but a has K=4"}));
  HostTensor b2(DType::kF32, {3, 4, 6});
  EXPECT_TRUE(fails_with(run_kernel("matmul", {a.view(), b2.view()}, {c.view()}),
                         ErrorCode::kInvalidArgument, {"matmul", "leading dims"}));
  HostTensor b3(DType::kF32, {4, 6});
  EXPECT_TRUE(fails_with(run_kernel("matmul", {a.view(), b3.view()}, {c.view()}),
                         ErrorCode::kInvalidArgument, {"matmul", "b has rank 2"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
