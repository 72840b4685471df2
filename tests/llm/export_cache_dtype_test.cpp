// f16 KV caches: the exporter stores keys (after rotary embedding) and values as IEEE half, the
// runner allocates and validates caches of that dtype, and the logits match the float64
// reference that rounds keys and values the same way, on the architectures whose attention
// differs (grouped queries with q/k norms, sliding windows, partial rotary).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kestrel/export/exporter.h"
#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "llm/reference_model.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

namespace keys = contract::hf_static;

struct CacheCase {
  std::string name;
  fixtures::FixtureConfig config;
};

std::vector<CacheCase> cache_cases() {
  std::vector<CacheCase> all;
  all.push_back({"llama", small_fixture()});
  auto qwen3 = small_fixture();
  qwen3.architecture = "Qwen3ForCausalLM";
  qwen3.num_kv_heads = 1;
  all.push_back({"qwen3", qwen3});
  all.push_back({"gemma3", gemma3_sliding(small_fixture())});
  auto phi = small_fixture();
  phi.architecture = "Phi3ForCausalLM";
  phi.config_overrides = R"({"partial_rotary_factor": 0.75})";
  all.push_back({"phi3", phi});
  return all;
}

double max_difference(std::span<const float> actual, const std::vector<double>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
    worst = std::max(worst, std::fabs(actual[i] - expected[i]));
  return worst;
}

class F16Caches : public ::testing::TestWithParam<CacheCase> {};

TEST_P(F16Caches, LogitsMatchTheReferenceThatRoundsKeysAndValues) {
  const fixtures::FixtureConfig& config = GetParam().config;
  auto options = small_export(4, 48);
  options.cache_dtype = DType::kF16;
  const auto spec = export_fixture(config, options);
  ASSERT_FALSE(spec.methods.empty());
  EXPECT_EQ(std::get<std::string>(spec.metadata.at(keys::kCacheDtype)), "f16");
  auto runner = llm::Runner::from_program(load_spec(spec));
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  auto& io = dynamic_cast<llm::HfStaticIOManager&>((*runner)->io_manager());
  EXPECT_EQ(io.config().cache_dtype, DType::kF16);
  for (runtime::Method* method : io.methods()) {
    EXPECT_EQ(method->input_info(2).dtype, DType::kF16) << method->name();
    EXPECT_EQ(method->output_info(1).dtype, DType::kF16) << method->name();
  }

  ReferenceModel rounding(config, false, 48), exact(config, false, 48);
  rounding.set_f16_cache(true);
  // A prompt of one prefill chunk and a tail, then decode steps teacher-forced by the reference.
  std::vector<int64_t> tokens{1, 17, 42, 5, 88, 23};
  auto logits = io.forward(tokens, 0);
  double worst_rounding = 0, worst_exact = 0;
  for (int step = 0; step < 12; ++step) {
    ASSERT_TRUE(logits.ok()) << logits.error().to_string();
    const auto want = rounding.forward(tokens).back();
    worst_rounding = std::max(worst_rounding, max_difference(*logits, want));
    worst_exact = std::max(worst_exact, max_difference(*logits, exact.forward(tokens).back()));
    tokens.push_back(static_cast<int64_t>(std::max_element(want.begin(), want.end()) - want.begin()));
    logits = io.forward(std::span<const int64_t>(&tokens.back(), 1), static_cast<int64_t>(tokens.size()) - 1);
  }
  // The program computes in f32 around the rounded caches; the unrounded reference is further
  // away (the rounding is really there, and modeled where it happens).
  EXPECT_LE(worst_rounding, 2e-4);
  EXPECT_GT(worst_exact, 4 * worst_rounding) << "f16 caches should differ from f32 caches";
}

INSTANTIATE_TEST_SUITE_P(Architectures, F16Caches, ::testing::ValuesIn(cache_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(F16CacheExport, HalveTheCacheBuffers) {
  auto options = small_export(4, 48);
  const auto f32 = export_fixture(small_fixture(), options);
  options.cache_dtype = DType::kF16;
  const auto f16 = export_fixture(small_fixture(), options);
  auto a = llm::Runner::from_program(load_spec(f32));
  auto b = llm::Runner::from_program(load_spec(f16));
  ASSERT_TRUE(a.ok() && b.ok());
  auto cache_bytes = [](llm::Runner& runner) {
    auto& io = dynamic_cast<llm::HfStaticIOManager&>(runner.io_manager());
    return io.methods().front()->input_info(2).nbytes;
  };
  EXPECT_EQ(cache_bytes(**a), 2 * cache_bytes(**b));
}

TEST(F16CacheExport, OtherCacheDtypesAreAnExportError) {
  for (DType dtype : {DType::kBF16, DType::kQ8, DType::kI64}) {
    auto options = small_export(4, 48);
    options.cache_dtype = dtype;
    auto spec = try_export_fixture(small_fixture(), options);
    ASSERT_FALSE(spec.ok()) << dtype_name(dtype);
    EXPECT_NE(spec.error().message().find("--cache-dtype must be f32 or f16"), std::string::npos)
        << spec.error().message();
  }
}

}  // namespace
}  // namespace kestrel::testing
