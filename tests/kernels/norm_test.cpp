// rms_norm and layer_norm against the float64 reference.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

class RmsNormTest : public ::testing::TestWithParam<DType> {};

TEST_P(RmsNormTest, MatchesReference) {
  const int64_t D = 13;
  auto x = HostTensor::from_floats(DType::kF32, {1, 5, D}, random_floats(5 * D, 30, -3.0f, 3.0f));
  auto w = HostTensor::from_floats(GetParam(), {D}, random_floats(D, 31, 0.5f, 1.5f));
  HostTensor y(DType::kF32, {1, 5, D});
  ASSERT_TRUE(run_kernel("rms_norm", {x.view(), w.view()}, {y.view()}, {{"eps", 1e-6}}).ok());
  EXPECT_TRUE(all_close(y.values(), ref::rms_norm(x.values(), D, w.values(), 1e-6), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(WeightDtypes, RmsNormTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(RmsNorm, InPlaceAndLargeEps) {
  const int64_t D = 8;
  auto x = HostTensor::from_floats(DType::kF32, {3, D}, random_floats(3 * D, 32));
  const auto before = x.values();
  auto w = HostTensor::from_floats(DType::kF32, {D}, random_floats(D, 33));
  ASSERT_TRUE(run_kernel("rms_norm", {x.view(), w.view()}, {x.view()}, {{"eps", 0.5}}).ok());
  EXPECT_TRUE(all_close(x.values(), ref::rms_norm(before, D, w.values(), 0.5), 1e-5));
}

TEST(RmsNorm, RequiresEpsAndMatchingWeight) {
  HostTensor x(DType::kF32, {2, 8});
  HostTensor w(DType::kF32, {8});
  HostTensor y(DType::kF32, {2, 8});
  EXPECT_TRUE(fails_with(run_kernel("rms_norm", {x.view(), w.view()}, {y.view()}),
                         ErrorCode::kInvalidArgument, {"rms_norm", "missing attribute 'eps'"}));
  EXPECT_TRUE(fails_with(run_kernel("rms_norm", {x.view(), w.view()}, {y.view()}, {{"eps", std::string("x")}}),
                         ErrorCode::kInvalidArgument, {"rms_norm", "'eps' is string, expected float"}));
  EXPECT_TRUE(fails_with(run_kernel("rms_norm", {x.view(), w.view()}, {y.view()}, {{"eps", -1.0}}),
                         ErrorCode::kInvalidArgument, {"rms_norm", "eps"}));
  HostTensor w7(DType::kF32, {7});
  EXPECT_TRUE(fails_with(run_kernel("rms_norm", {x.view(), w7.view()}, {y.view()}, {{"eps", 1e-5}}),
                         ErrorCode::kInvalidArgument, {"rms_norm", "weight has shape [7], expected [8]"}));
  HostTensor wq(DType::kI64, {8});
  EXPECT_TRUE(fails_with(run_kernel("rms_norm", {x.view(), wq.view()}, {y.view()}, {{"eps", 1e-5}}),
                         ErrorCode::kInvalidArgument, {"rms_norm", "weight has dtype i64"}));
  // An int attribute is accepted where a float is expected.
  EXPECT_TRUE(run_kernel("rms_norm", {x.view(), w.view()}, {y.view()}, {{"eps", int64_t{1}}}).ok());
}

TEST(LayerNorm, WithAndWithoutBias) {
  const int64_t D = 13;
  auto x = HostTensor::from_floats(DType::kF32, {4, D}, random_floats(4 * D, 34, 2.0f, 4.0f));
  auto w = HostTensor::from_floats(DType::kF32, {D}, random_floats(D, 35));
  auto b = HostTensor::from_floats(DType::kBF16, {D}, random_floats(D, 36));
  HostTensor y(DType::kF32, {4, D});
  ASSERT_TRUE(run_kernel("layer_norm", {x.view(), w.view(), b.view()}, {y.view()}, {{"eps", 1e-5}}).ok());
  EXPECT_TRUE(all_close(y.values(), ref::layer_norm(x.values(), D, w.values(), b.values(), 1e-5), 1e-5));
  ASSERT_TRUE(run_kernel("layer_norm", {x.view(), w.view()}, {y.view()}, {{"eps", 1e-5}}).ok());
  EXPECT_TRUE(all_close(y.values(), ref::layer_norm(x.values(), D, w.values(), {}, 1e-5), 1e-5));
}

TEST(LayerNorm, RejectsBadBias) {
  HostTensor x(DType::kF32, {2, 8});
  HostTensor w(DType::kF32, {8});
  HostTensor b(DType::kF32, {2, 8});
  HostTensor y(DType::kF32, {2, 8});
  EXPECT_TRUE(fails_with(run_kernel("layer_norm", {x.view(), w.view(), b.view()}, {y.view()}, {{"eps", 1e-5}}),
                         ErrorCode::kInvalidArgument, {"layer_norm", "bias has shape [2, 8]"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
