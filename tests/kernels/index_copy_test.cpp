// index_copy, the KV-cache update: out of place, in place, any axis, index validation.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "kernels/kernel_test_util.h"
#include "kernels/reference.h"

namespace kestrel::kernels::testing {
namespace {

namespace ref = reference;

TEST(IndexCopy, OutOfPlaceLeavesDstAlone) {
  const int64_t H = 2, C = 8, T = 3, Dh = 5;
  auto dst = HostTensor::from_floats(DType::kF32, {1, H, C, Dh}, random_floats(H * C * Dh, 80));
  auto src = HostTensor::from_floats(DType::kF32, {1, H, T, Dh}, random_floats(H * T * Dh, 81));
  const std::vector<int64_t> idx{5, 1, 7};
  auto index = HostTensor::from_ints({T}, idx);
  HostTensor out(DType::kF32, {1, H, C, Dh});
  const auto dst_before = dst.values();
  ASSERT_TRUE(run_kernel("index_copy", {dst.view(), index.view(), src.view()}, {out.view()},
                         {{"axis", int64_t{2}}})
                  .ok());
  EXPECT_EQ(out.values(), ref::index_copy(dst_before, {1, H, C, Dh}, 2, idx, src.values()));
  EXPECT_EQ(dst.values(), dst_before);
}

TEST(IndexCopy, InPlaceWritesOnlyTheSlices) {
  const int64_t H = 3, C = 6, T = 2, Dh = 4;
  auto cache = HostTensor::from_floats(DType::kF32, {1, H, C, Dh}, random_floats(H * C * Dh, 82));
  auto src = HostTensor::from_floats(DType::kF32, {1, H, T, Dh}, random_floats(H * T * Dh, 83));
  const std::vector<int64_t> idx{3, 4};
  auto index = HostTensor::from_ints({T}, idx);
  const auto want = ref::index_copy(cache.values(), {1, H, C, Dh}, 2, idx, src.values());
  // Negative axis, output aliasing dst.
  ASSERT_TRUE(run_kernel("index_copy", {cache.view(), index.view(), src.view()}, {cache.view()},
                         {{"axis", int64_t{-2}}})
                  .ok());
  EXPECT_EQ(cache.values(), want);
}

TEST(IndexCopy, InPlaceDoesNotTouchOtherSlots) {
  // One cache slot per page; every page but the written slot's is read-only, so any write
  // outside the slices (even of unchanged bytes, as a whole-tensor self-copy would do) faults.
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const int64_t C = 3, D = static_cast<int64_t>(page / sizeof(float));
  void* mem = mmap(nullptr, C * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* slots = static_cast<float*>(mem);
  for (int64_t i = 0; i < C * D; ++i) slots[i] = static_cast<float>(i % 97);
  ASSERT_EQ(mprotect(mem, page, PROT_READ), 0);
  ASSERT_EQ(mprotect(static_cast<uint8_t*>(mem) + 2 * page, page, PROT_READ), 0);
  auto src = HostTensor::from_floats(DType::kF32, {1, D}, std::vector<float>(D, -1.0f));
  auto index = HostTensor::from_ints({1}, {1});
  const TensorView cache = TensorView::contiguous(DType::kF32, {C, D}, mem);
  const Status status = run_kernel("index_copy", {cache, index.view(), src.view()}, {cache}, {{"axis", int64_t{0}}});
  EXPECT_TRUE(status.ok());
  for (int64_t i = 0; i < C * D; ++i) {
    const float want = i / D == 1 ? -1.0f : static_cast<float>(i % 97);
    if (slots[i] != want) {
      ADD_FAILURE() << "element " << i << " is " << slots[i] << ", expected " << want;
      break;
    }
  }
  munmap(mem, C * page);
}

TEST(IndexCopy, LeadingAndTrailingAxesAndOtherDtypes) {
  // axis 0 of [C, 3] and the last axis of [2, C], with f16 and i64 data.
  auto dst = HostTensor::from_floats(DType::kF16, {5, 3}, random_floats(15, 84));
  auto src = HostTensor::from_floats(DType::kF16, {2, 3}, random_floats(6, 85));
  auto index = HostTensor::from_ints({2}, {4, 0});
  HostTensor out(DType::kF16, {5, 3});
  ASSERT_TRUE(run_kernel("index_copy", {dst.view(), index.view(), src.view()}, {out.view()},
                         {{"axis", int64_t{0}}})
                  .ok());
  EXPECT_EQ(out.values(), ref::index_copy(dst.values(), {5, 3}, 0, {4, 0}, src.values()));

  auto idst = HostTensor::from_ints({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto isrc = HostTensor::from_ints({2, 1}, {-1, -2});
  auto last = HostTensor::from_ints({1}, {3});
  HostTensor iout(DType::kI64, {2, 5});
  ASSERT_TRUE(run_kernel("index_copy", {idst.view(), last.view(), isrc.view()}, {iout.view()},
                         {{"axis", int64_t{-1}}})
                  .ok());
  EXPECT_EQ(iout.ints(), (std::vector<int64_t>{0, 1, 2, -1, 4, 5, 6, 7, -2, 9}));
}

TEST(IndexCopy, BadIndexLeavesTheCacheUntouched) {
  auto cache = HostTensor::from_floats(DType::kF32, {1, 1, 4, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  auto src = HostTensor::from_floats(DType::kF32, {1, 1, 2, 2}, {9, 9, 9, 9});
  auto index = HostTensor::from_ints({2}, {1, 4});
  const auto before = cache.values();
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {cache.view(), index.view(), src.view()}, {cache.view()},
                                    {{"axis", int64_t{2}}}),
                         ErrorCode::kOutOfRange, {"index_copy", "index 4", "[0, 4)"}));
  EXPECT_EQ(cache.values(), before);
  auto negative = HostTensor::from_ints({2}, {-1, 0});
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {cache.view(), negative.view(), src.view()}, {cache.view()},
                                    {{"axis", int64_t{2}}}),
                         ErrorCode::kOutOfRange, {"index_copy", "index -1"}));
}

TEST(IndexCopy, RejectsMismatchedInputs) {
  HostTensor dst(DType::kF32, {1, 2, 8, 4});
  HostTensor out(DType::kF32, {1, 2, 8, 4});
  auto index = HostTensor::from_ints({2}, {0, 1});
  const program::Attrs axis2{{"axis", int64_t{2}}};
  HostTensor src_bad(DType::kF32, {1, 2, 3, 4});
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst.view(), index.view(), src_bad.view()}, {out.view()}, axis2),
                         ErrorCode::kInvalidArgument, {"index_copy", "src has shape [1, 2, 3, 4], expected [1, 2, 2, 4]"}));
  HostTensor src_f16(DType::kF16, {1, 2, 2, 4});
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst.view(), index.view(), src_f16.view()}, {out.view()}, axis2),
                         ErrorCode::kInvalidArgument, {"index_copy", "src has dtype f16, expected f32"}));
  HostTensor src(DType::kF32, {1, 2, 2, 4});
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst.view(), index.view(), src.view()}, {out.view()}),
                         ErrorCode::kInvalidArgument, {"index_copy", "missing attribute 'axis'"}));
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst.view(), index.view(), src.view()}, {out.view()},
                                    {{"axis", int64_t{4}}}),
                         ErrorCode::kOutOfRange, {"index_copy", "axis 4"}));
  HostTensor index_f(DType::kF32, {2});
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst.view(), index_f.view(), src.view()}, {out.view()}, axis2),
                         ErrorCode::kInvalidArgument, {"index_copy", "index has dtype f32"}));
  // The output must be dst itself or storage of its own, never a shifted window over it.
  HostTensor big(DType::kF32, {1, 2, 9, 4});
  TensorView dst_in_big = TensorView::contiguous(DType::kF32, {1, 2, 8, 4}, big.view().data);
  TensorView out_in_big = TensorView::contiguous(DType::kF32, {1, 2, 8, 4}, static_cast<float*>(big.view().data) + 4);
  EXPECT_TRUE(fails_with(run_kernel("index_copy", {dst_in_big, index.view(), src.view()}, {out_in_big}, axis2),
                         ErrorCode::kInvalidArgument, {"index_copy", "output overlaps", "dst"}));
}

}  // namespace
}  // namespace kestrel::kernels::testing
