// One owner of the KV-cache update: the exporter declares cache_update = "in_place" when every
// method writes its new k/v slices into the caches itself, and the runner then copies nothing;
// a program without the key keeps the runner's copy. The bytes are counted where the copy
// happens.
#include <gtest/gtest.h>

#include <cstring>

#include "cpu/model_fixture.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/program/io_contract.h"
#include "kestrel/runtime/buffer_allocator.h"
#include "kestrel/runtime/method.h"

namespace kestrel::cpu::testing {
namespace {

namespace keys = contract::hf_static;

constexpr int64_t kLayers = 2, kKvHeads = 2, kHeadDim = 16;

std::vector<std::vector<float>> generate(llm::HfStaticIOManager& io, const std::vector<int64_t>& prompt, int steps) {
  std::vector<std::vector<float>> out;
  auto logits = io.forward(prompt, 0);
  EXPECT_TRUE(logits.ok());
  if (!logits.ok()) return out;
  out.emplace_back(logits->begin(), logits->end());
  for (int s = 0; s < steps; ++s) {
    const int64_t token = 10 + s;
    logits = io.forward(std::span<const int64_t>(&token, 1), static_cast<int64_t>(prompt.size()) + s);
    EXPECT_TRUE(logits.ok());
    if (!logits.ok()) return out;
    out.emplace_back(logits->begin(), logits->end());
  }
  return out;
}

class KvCacheUpdateOfCaches : public ::testing::TestWithParam<DType> {};

// With f32 and with f16 caches (whose rows the runner copies as 2-byte elements).
TEST_P(KvCacheUpdateOfCaches, TheExporterDeclaresInPlaceUpdatesAndTheRunnerCopiesNothing) {
  const DType cache_dtype = GetParam();
  const auto spec = small_model_spec(DType::kF32, 4, 32, {}, cache_dtype);
  EXPECT_EQ(std::get<std::string>(spec.metadata.at(keys::kCacheDtype)), dtype_name(cache_dtype));
  ASSERT_EQ(spec.metadata.count(keys::kCacheUpdate), 1u);
  EXPECT_EQ(std::get<std::string>(spec.metadata.at(keys::kCacheUpdate)), keys::kCacheUpdateInPlace);
  auto without_key = spec;
  without_key.metadata.erase(keys::kCacheUpdate);

  CpuKernelOptions options;
  options.threads = 2;
  const auto kernels = optimized_kernel_registry(options);
  // The prompt's two tail tokens through decode calls, or through one window of the prefill
  // method over positions 2-5 (which the copying runner writes back too).
  for (auto policy : {llm::TailPolicy::kDecode, llm::TailPolicy::kOverlap}) {
    const bool window = policy == llm::TailPolicy::kOverlap;
    SCOPED_TRACE(window ? "tail in a prefill window" : "tail through decode");
    auto in_place = load_io(load_program_spec(spec), kernels);
    auto copying = load_io(load_program_spec(without_key), kernels);
    ASSERT_NE(in_place, nullptr);
    ASSERT_NE(copying, nullptr);
    EXPECT_TRUE(in_place->config().cache_updated_in_place);
    EXPECT_FALSE(copying->config().cache_updated_in_place);
    in_place->set_tail_policy(policy);
    copying->set_tail_policy(policy);

    const std::vector<int64_t> prompt{1, 7, 19, 44, 3, 150};  // one prefill chunk, a tail of two
    const int steps = 5;
    const auto a = generate(*in_place, prompt, steps);
    const auto b = generate(*copying, prompt, steps);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0) << "step " << i;

    // Counted at the copy: every layer's k and v slice, H rows of Dh elements per token.
    const int64_t per_token =
        2 * kLayers * kKvHeads * kHeadDim * static_cast<int64_t>(dtype_element_size(cache_dtype));
    const llm::IoStats copied = copying->io_stats();
    EXPECT_EQ(copied.prefill_calls, window ? 2 : 1);
    EXPECT_EQ(copied.decode_calls, (window ? 0 : 2) + steps);
    EXPECT_EQ(copied.decode_cache_bytes_copied, copied.decode_calls * per_token);
    EXPECT_EQ(copied.prefill_cache_bytes_copied, copied.prefill_calls * 4 * per_token);
    const llm::IoStats none = in_place->io_stats();
    EXPECT_EQ(none.decode_calls, copied.decode_calls);
    EXPECT_EQ(none.decode_cache_bytes_copied, 0);
    EXPECT_EQ(none.prefill_cache_bytes_copied, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(CacheDtypes, KvCacheUpdateOfCaches, ::testing::Values(DType::kF32, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(KvCacheUpdate, AnUnknownValueIsRefusedNamingTheKey) {
  auto spec = small_model_spec(DType::kF32, 4, 32);
  spec.metadata[keys::kCacheUpdate] = std::string("sometimes");
  auto program = runtime::Program::from_loaded(load_program_spec(spec), optimized_kernel_registry(1), nullptr);
  ASSERT_TRUE(program.ok());
  llm::HfStaticIOManager io;
  auto allocator = runtime::make_buffer_allocator("heap");
  ASSERT_TRUE(allocator.ok());
  const Status status = io.load(*program, std::move(*allocator));
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("'cache_update' is 'sometimes'"), std::string::npos)
      << status.error().message();
}

}  // namespace
}  // namespace kestrel::cpu::testing
