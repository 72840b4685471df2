// Exported programs against the float64 reference: prefill chunks followed by decode steps
// give the reference logits (max abs error <= 1e-4 with f32 weights) and the same greedy text.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/llm/runner.h"
#include "llm/reference_model.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

struct Case {
  std::string name;
  fixtures::FixtureConfig config;
  bool llama2c = false;
  std::string logits = "last";
};

std::vector<Case> cases() {
  std::vector<Case> all;
  auto base = small_fixture();
  all.push_back({"llama_gqa_untied", base});
  auto tied = base;
  tied.tie_word_embeddings = true;
  tied.num_kv_heads = 4;
  all.push_back({"llama_mha_tied", tied});
  auto qwen = base;
  qwen.architecture = "Qwen2ForCausalLM";
  qwen.attention_bias = true;
  qwen.num_kv_heads = 1;
  all.push_back({"qwen2_bias_mqa", qwen});
  auto bf16 = base;
  bf16.dtype = DType::kBF16;
  all.push_back({"llama_bf16", bf16});
  auto scaled = base;
  scaled.llama3_rope_scaling = true;
  all.push_back({"llama3_rope_scaling", scaled});
  auto mistral = base;
  mistral.architecture = "MistralForCausalLM";
  mistral.shards = 2;
  all.push_back({"mistral_sharded_all_logits", mistral, false, "all"});
  auto llama2c = base;
  llama2c.bos_id = 1;
  llama2c.eos_id = 2;
  all.push_back({"llama2c", llama2c, true});
  return all;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ExportCorrectness : public ::testing::TestWithParam<Case> {};

double max_abs_error(std::span<const float> actual, const std::vector<double>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(actual[i]) - expected[i]));
  return worst;
}

TEST_P(ExportCorrectness, LogitsAndGreedyTokensMatchReference) {
  const Case& c = GetParam();
  auto options = small_export(4, 48);
  options.logits = c.logits;
  auto spec = export_fixture(c.config, options, c.llama2c);
  ASSERT_FALSE(spec.methods.empty());
  auto program = load_spec(spec);
  ASSERT_NE(program, nullptr);
  auto runner = llm::Runner::from_program(program);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();

  const ReferenceModel reference(c.config, c.llama2c);
  // 11 tokens: two full prefill chunks and a tail of 3.
  std::vector<int64_t> tokens{1, 17, 42, 5, 88, 23, 64, 9, 31, 77, 50};
  auto& io = (*runner)->io_manager();
  auto logits = io.forward(tokens, 0);
  ASSERT_TRUE(logits.ok()) << logits.error().to_string();
  auto expected = reference.forward(tokens);
  EXPECT_LE(max_abs_error(*logits, expected.back()), 1e-4);

  // Decode steps, each compared with the reference on the whole sequence.
  for (int step = 0; step < 5; ++step) {
    const auto next = static_cast<int64_t>(std::max_element(logits->begin(), logits->end()) - logits->begin());
    tokens.push_back(next);
    logits = io.forward(std::span<const int64_t>(&tokens.back(), 1), static_cast<int64_t>(tokens.size()) - 1);
    ASSERT_TRUE(logits.ok()) << logits.error().to_string();
    expected = reference.forward(tokens);
    EXPECT_LE(max_abs_error(*logits, expected.back()), 1e-4) << "decode step " << step;
  }

  // Greedy generation through the runner equals the reference's greedy continuation.
  (*runner)->reset();
  llm::GenerationConfig config;
  config.max_new_tokens = 8;
  config.sampler.temperature = 0;
  config.stop_at_eos = false;
  const std::vector<int64_t> prompt{1, 17, 42, 5, 88, 23};
  auto result = (*runner)->generate_ids(prompt, config);
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(result->token_ids, reference.greedy(prompt, 8));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, ExportCorrectness, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace kestrel::testing
