// Exported programs against the independent float64 reference (tests/llm/reference_model), for
// every architecture of the table and the config features each honours. Every prefill/decode
// routing is checked: full prefill chunks with the tail through decode, single decode steps,
// and an overlapping prefill window over positions already in the cache. f32 weights: max abs
// logit error <= 1e-4.
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
  int64_t max_context = 48;
};

std::string factors(int count, double first, double step) {
  std::string out = "[";
  for (int i = 0; i < count; ++i) out += (i ? ", " : "") + std::to_string(first + step * i);
  return out + "]";
}

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

  // Biases everywhere a Llama config can put them, and the gelu family.
  auto biased = base;
  biased.attention_bias = true;
  biased.config_overrides = R"({"mlp_bias": true})";
  all.push_back({"llama_attention_and_mlp_bias", biased});
  auto gelu = base;
  gelu.hidden_act = "gelu";
  all.push_back({"llama_gelu", gelu});
  auto gelu_new = tied;
  gelu_new.hidden_act = "gelu_new";
  all.push_back({"llama_gelu_new_tied", gelu_new});

  // Sliding windows shorter than the 16 positions the test runs (3 is shorter than a chunk).
  auto mistral_window = base;
  mistral_window.architecture = "MistralForCausalLM";
  mistral_window.sliding_window = 6;
  all.push_back({"mistral_sliding_window", mistral_window});
  auto qwen2_window = qwen;
  qwen2_window.config_overrides = R"({"use_sliding_window": true, "sliding_window": 3, "max_window_layers": 1})";
  all.push_back({"qwen2_sliding_upper_layers", qwen2_window});

  // Qwen3: q/k norms and a head_dim that is not hidden / heads.
  auto qwen3 = base;
  qwen3.architecture = "Qwen3ForCausalLM";
  qwen3.head_dim = 16;
  all.push_back({"qwen3_qk_norm_head_dim", qwen3});
  auto qwen3_window = qwen3;
  qwen3_window.attention_bias = true;
  qwen3_window.tie_word_embeddings = true;
  qwen3_window.config_overrides = R"({"use_sliding_window": true, "sliding_window": 5, "max_window_layers": 1})";
  all.push_back({"qwen3_bias_tied_sliding", qwen3_window});
  auto qwen3_bf16 = qwen3;
  qwen3_bf16.dtype = DType::kBF16;
  all.push_back({"qwen3_bf16", qwen3_bf16});

  // Gemma 3: sandwich (1 + w) norms, scaled embeddings, gelu tanh, q/k norms,
  // query_pre_attn_scalar, sliding layers with their own rope base, linear scaling on full ones.
  auto gemma = base;
  gemma.architecture = "Gemma3ForCausalLM";
  gemma.head_dim = 16;
  gemma.num_kv_heads = 1;
  gemma.tie_word_embeddings = true;
  gemma.sliding_window = 4;
  gemma.rope_theta = 1000000;
  gemma.config_overrides =
      R"({"layer_types": ["sliding_attention", "full_attention"], "query_pre_attn_scalar": 12,
          "rope_scaling": {"rope_type": "linear", "factor": 2.0}})";
  all.push_back({"gemma3_layer_types", gemma});
  auto gemma_pattern = gemma;
  gemma_pattern.num_layers = 3;
  gemma_pattern.dtype = DType::kBF16;  // the embedding scale is cast to bf16
  gemma_pattern.config_overrides = R"({"sliding_window_pattern": 2, "rope_local_base_freq": 500.0})";
  all.push_back({"gemma3_pattern_bf16", gemma_pattern});

  // Phi-3 / Phi-4-mini: fused projections, partial rotary 0.75, longrope (long factors for a
  // context past original_max_position_embeddings, short ones within it), sliding window.
  auto phi = base;
  phi.architecture = "Phi3ForCausalLM";
  phi.hidden_size = 64;
  phi.num_heads = 4;
  phi.max_position_embeddings = 128;
  phi.config_overrides = R"({"partial_rotary_factor": 0.75, "original_max_position_embeddings": 32,
      "rope_scaling": {"type": "longrope", "short_factor": )" + factors(6, 1.0, 0.05) +
                         R"(, "long_factor": )" + factors(6, 1.5, 0.8) + "}}";
  all.push_back({"phi3_longrope_long_partial", phi});
  auto phi_short = phi;
  phi_short.tie_word_embeddings = true;
  phi_short.config_overrides = R"({"partial_rotary_factor": 0.75, "original_max_position_embeddings": 32,
      "sliding_window": 7, "rope_scaling": {"type": "longrope", "attention_factor": 1.3, "short_factor": )" +
                               factors(6, 1.0, 0.05) + R"(, "long_factor": )" + factors(6, 1.5, 0.8) + "}}";
  all.push_back({"phi3_longrope_short_window", phi_short, false, "last", 24});

  // SmolLM3: NoPE layers (every second), which also slide.
  auto smol3 = base;
  smol3.architecture = "SmolLM3ForCausalLM";
  smol3.num_layers = 4;
  smol3.tie_word_embeddings = true;
  smol3.config_overrides = R"({"no_rope_layer_interval": 2, "use_sliding_window": true, "sliding_window": 4})";
  all.push_back({"smollm3_nope_sliding", smol3});
  return all;
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ExportCorrectness : public ::testing::TestWithParam<Case> {};

TEST_P(ExportCorrectness, LogitsAndGreedyTokensMatchReferenceInEveryRouting) {
  const Case& c = GetParam();
  constexpr int64_t kStep = 4;
  auto options = small_export(kStep, c.max_context);
  options.logits = c.logits;
  auto spec = export_fixture(c.config, options, c.llama2c);
  ASSERT_FALSE(spec.methods.empty());
  auto program = load_spec(spec);
  ASSERT_NE(program, nullptr);
  auto runner = llm::Runner::from_program(program);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  const ReferenceModel reference(c.config, c.llama2c, c.max_context);

  // 11 tokens: two full prefill chunks, the tail of 3 through decode.
  std::vector<int64_t> tokens{1, 17, 42, 5, 88, 23, 64, 9, 31, 77, 50};
  auto& io = dynamic_cast<llm::HfStaticIOManager&>((*runner)->io_manager());
  io.set_tail_policy(llm::TailPolicy::kDecode);
  auto logits = io.forward(tokens, 0);
  ASSERT_TRUE(logits.ok()) << logits.error().to_string();
  EXPECT_EQ(io.prefill_calls(), 2);
  EXPECT_EQ(io.decode_calls(), 3);
  auto expected = reference.forward(tokens);
  EXPECT_LE(max_abs_error(*logits, expected.back()), 1e-4) << "prefill chunks + decoded tail";

  // Decode steps, each compared with the reference on the whole sequence.
  for (int step = 0; step < 5; ++step) {
    const int64_t next = argmax(*logits);
    tokens.push_back(next);
    logits = io.forward(std::span<const int64_t>(&tokens.back(), 1), static_cast<int64_t>(tokens.size()) - 1);
    ASSERT_TRUE(logits.ok()) << logits.error().to_string();
    expected = reference.forward(tokens);
    EXPECT_LE(max_abs_error(*logits, expected.back()), 1e-4) << "decode step " << step;
  }

  // An overlapping prefill window: one prefill call over the last kStep positions, three of them
  // already in the cache (what the runner's overlapping tail does).
  const int64_t n = static_cast<int64_t>(tokens.size());
  const int64_t prefills = io.prefill_calls();
  logits = io.forward(std::span<const int64_t>(tokens.data() + n - kStep, kStep), n - kStep);
  ASSERT_TRUE(logits.ok()) << logits.error().to_string();
  EXPECT_EQ(io.prefill_calls(), prefills + 1);
  EXPECT_LE(max_abs_error(*logits, expected.back()), 1e-4) << "overlapping prefill window";

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
