// embedding for every table dtype, and id validation.
#include <gtest/gtest.h>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

class EmbeddingTest : public ::testing::TestWithParam<DType> {};

TEST_P(EmbeddingTest, GathersRowsOfEveryDtype) {
  const DType dtype = GetParam();
  const int64_t V = 11, D = dtype == DType::kQ8 ? 64 : 13;
  auto table = HostTensor::from_floats(dtype, {V, D}, random_floats(V * D, 20));
  const std::vector<int64_t> ids{0, 10, 3, 3, 7, 1};
  auto id_tensor = HostTensor::from_ints({2, 3}, ids);
  HostTensor out(DType::kF32, {2, 3, D});
  ASSERT_TRUE(run_kernel("embedding", {table.view(), id_tensor.view()}, {out.view()}).ok());
  // Rows are copies of representable values, so the match is exact.
  EXPECT_TRUE(all_close(out.values(), ref::embedding(table.values(), D, ids), 0.0));
}

INSTANTIATE_TEST_SUITE_P(TableDtypes, EmbeddingTest,
                         ::testing::Values(DType::kF32, DType::kF16, DType::kBF16, DType::kQ8),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(Embedding, IdOutOfRangeIsNamedAndNothingIsWritten) {
  auto table = HostTensor::from_floats(DType::kF32, {4, 3}, random_floats(12, 21));
  auto ids = HostTensor::from_ints({1, 3}, {1, 4, 2});
  auto out = HostTensor::from_floats(DType::kF32, {1, 3, 3}, std::vector<float>(9, 42.0f));
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table.view(), ids.view()}, {out.view()}),
                         ErrorCode::kOutOfRange, {"embedding", "id 4", "[0, 4)"}));
  EXPECT_EQ(out.values(), std::vector<double>(9, 42.0));
  auto negative = HostTensor::from_ints({1}, {-1});
  HostTensor out1(DType::kF32, {1, 3});
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table.view(), negative.view()}, {out1.view()}),
                         ErrorCode::kOutOfRange, {"embedding", "id -1"}));
}

TEST(Embedding, RejectsBadDtypesAndShapes) {
  HostTensor table(DType::kF32, {4, 3});
  HostTensor ids32(DType::kI32, {1, 2});
  HostTensor out(DType::kF32, {1, 2, 3});
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table.view(), ids32.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"embedding", "ids has dtype i32, expected i64"}));
  auto ids = HostTensor::from_ints({1, 2}, {0, 1});
  HostTensor out_bad(DType::kF32, {1, 2, 4});
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table.view(), ids.view()}, {out_bad.view()}),
                         ErrorCode::kInvalidArgument, {"embedding", "output", "[1, 2, 3]"}));
  HostTensor table_i(DType::kI64, {4, 3});
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table_i.view(), ids.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"embedding", "table", "i64"}));
  HostTensor table1(DType::kF32, {12});
  EXPECT_TRUE(fails_with(run_kernel("embedding", {table1.view(), ids.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"embedding", "table has rank 1"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
