// The architecture table: tensor names come from it everywhere, every config field that changes
// the computation is honoured or refused (one test per refused field, naming the field and its
// value), implausible sizes are refused before anything proportional to them is allocated, and
// docs/models.md lists every field each architecture reads.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "kestrel/export/architecture.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/rope_tables.h"
#include "export/scratch_dir.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "support/expect_contains.h"

namespace kestrel::exporter {
namespace {

namespace fs = std::filesystem;

// A minimal config of `architecture` with small dimensions; `extra` adds or replaces keys.
// Keys are written once (config.json refuses repeated keys); values of `extra` stay as written.
std::string config_json(const std::string& architecture, const std::string& extra = "") {
  const std::vector<std::pair<std::string, std::string>> base = {
      {"vocab_size", "64"},         {"hidden_size", "32"},         {"intermediate_size", "48"},
      {"num_hidden_layers", "2"},   {"num_attention_heads", "4"},  {"num_key_value_heads", "2"},
      {"head_dim", "8"},            {"max_position_embeddings", "128"}};
  std::set<std::string> replaced;
  const auto extra_json = nlohmann::json::parse("{" + extra + "}", nullptr, /*allow_exceptions=*/false);
  if (!extra_json.is_discarded())
    for (const auto& item : extra_json.items()) replaced.insert(item.key());
  std::string json = R"({"architectures": [")" + architecture + R"("])";
  for (const auto& [key, value] : base)
    if (replaced.count(key) == 0) json += ", \"" + key + "\": " + value;
  if (!extra.empty()) json += ", " + extra;
  return json + "}";
}

// Parses expecting failure with `code`; returns the message.
std::string refusal(const std::string& json, ErrorCode code = ErrorCode::kUnsupported) {
  auto result = parse_hf_config(json);
  if (result.ok()) return "<accepted>";
  EXPECT_EQ(result.error().code(), code) << result.error().message();
  return result.error().message();
}

TEST(ArchitectureTable, EveryHfArchitectureParsesAndNamesItsTensorsFromTheTable) {
  for (const Architecture* architecture : architectures()) {
    if (architecture->read_config == nullptr) continue;
    SCOPED_TRACE(architecture->name);
    auto config = parse_hf_config(config_json(architecture->name));
    ASSERT_TRUE(config.ok()) << config.error().to_string();
    EXPECT_EQ(config->architecture, architecture->name);
    EXPECT_EQ(find_architecture_by_model_type(architecture->model_types.front()), architecture);
    const TensorNames& n = architecture->names;
    std::set<std::string> names;
    for (const auto& req : required_tensors(*config)) names.insert(req.name);
    EXPECT_TRUE(names.count(n.embedding));
    EXPECT_TRUE(names.count(n.final_norm));
    EXPECT_TRUE(names.count(n.layer(1, n.attn_norm)));
    EXPECT_TRUE(names.count(n.layer(1, n.ffn_norm)));
    EXPECT_TRUE(names.count(n.layer(1, n.o + ".weight")));
    EXPECT_TRUE(names.count(n.layer(1, n.down + ".weight")));
    if (!n.qkv.empty()) {
      EXPECT_TRUE(names.count(n.layer(0, n.qkv + ".weight")));
      EXPECT_FALSE(names.count(n.layer(0, "self_attn.q_proj.weight")));
    } else {
      EXPECT_TRUE(names.count(n.layer(0, n.q + ".weight")));
    }
    if (architecture->features.qk_norm) {
      EXPECT_TRUE(names.count(n.layer(0, n.q_norm)));
    }
    if (architecture->features.sandwich_norms) {
      EXPECT_TRUE(names.count(n.layer(0, n.post_ffn_norm)));
    }
    // The fixture writer produces exactly these tensors.
    fixtures::FixtureConfig fixture;
    fixture.architecture = architecture->name;
    auto tensors = fixtures::make_fixture_tensors(fixture);
    ASSERT_TRUE(tensors.ok()) << tensors.error().to_string();
    auto fixture_config = parse_hf_config(*fixtures::fixture_config_json(fixture));
    ASSERT_TRUE(fixture_config.ok());
    const auto required = required_tensors(*fixture_config);
    ASSERT_EQ(tensors->size(), required.size());
    for (size_t i = 0; i < required.size(); ++i) {
      EXPECT_EQ((*tensors)[i].name, required[i].name);
      EXPECT_EQ((*tensors)[i].shape, required[i].shape);
    }
  }
}

TEST(ArchitectureTable, Phi3FusedShapesAndQwen3HeadDim) {
  auto phi = parse_hf_config(config_json("Phi3ForCausalLM", R"("head_dim": null)"));
  ASSERT_TRUE(phi.ok()) << phi.error().to_string();
  const auto reqs = required_tensors(*phi);
  const auto qkv = std::find_if(reqs.begin(), reqs.end(), [](const auto& r) {
    return r.name == "model.layers.0.self_attn.qkv_proj.weight";
  });
  ASSERT_NE(qkv, reqs.end());
  EXPECT_EQ(qkv->shape, (std::vector<int64_t>{32 + 2 * 16, 32}));
  const auto gate_up = std::find_if(reqs.begin(), reqs.end(), [](const auto& r) {
    return r.name == "model.layers.0.mlp.gate_up_proj.weight";
  });
  ASSERT_NE(gate_up, reqs.end());
  EXPECT_EQ(gate_up->shape, (std::vector<int64_t>{96, 32}));
  // Qwen3's head_dim defaults to 128, not hidden_size / num_attention_heads.
  auto qwen3 = parse_hf_config(config_json("Qwen3ForCausalLM", R"("head_dim": null)"));
  ASSERT_TRUE(qwen3.ok());
  EXPECT_EQ(qwen3->head_dim, 128);
}

TEST(ArchitectureTable, DocsListEveryFieldOfEveryArchitecture) {
  std::ifstream in(fs::path(KESTREL_SOURCE_DIR) / "docs" / "models.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  for (const Architecture* architecture : architectures()) {
    EXPECT_CONTAINS(text.str(), "`" + architecture->name + "`");
    for (const ConfigField& field : architecture->fields) EXPECT_CONTAINS(text.str(), "`" + field.key + "`");
  }
}

// ---- what each architecture honours ----------------------------------------------------------

TEST(ArchitectureConfig, Gemma3DefaultsPatternAndRopePerLayerType) {
  auto c = parse_hf_config(config_json("Gemma3ForCausalLM", R"("num_hidden_layers": 7, "sliding_window": 16)"));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  // sliding_window_pattern 6: every sixth layer is full.
  for (int64_t i = 0; i < 7; ++i) EXPECT_EQ(c->layers[i].sliding, i != 5) << i;
  EXPECT_EQ(c->hidden_act, "gelu_tanh");
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_DOUBLE_EQ(c->rope_theta, 1000000);
  EXPECT_DOUBLE_EQ(c->local_rope_theta, 10000);
  EXPECT_DOUBLE_EQ(c->attention_scale, 1.0 / 16);  // query_pre_attn_scalar 256
  // The newer nested form: rope_parameters per layer type, layer_types listed.
  auto nested = parse_hf_config(config_json("Gemma3ForCausalLM", R"("layer_types": ["full_attention",
      "sliding_attention"], "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 8.0,
      "rope_theta": 1000000.0}, "sliding_attention": {"rope_type": "default", "rope_theta": 20000.0}})"));
  ASSERT_TRUE(nested.ok()) << nested.error().to_string();
  EXPECT_FALSE(nested->layers[0].sliding);
  EXPECT_TRUE(nested->layers[1].sliding);
  EXPECT_EQ(nested->rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(nested->rope_scaling.factor, 8);
  EXPECT_DOUBLE_EQ(nested->local_rope_theta, 20000);
}

TEST(ArchitectureConfig, QwenSlidingLayersFollowMaxWindowLayers) {
  auto off = parse_hf_config(config_json("Qwen2ForCausalLM", R"("sliding_window": 8, "max_window_layers": 1)"));
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->layers[0].sliding || off->layers[1].sliding);
  auto on = parse_hf_config(
      config_json("Qwen3ForCausalLM", R"("use_sliding_window": true, "sliding_window": 8, "max_window_layers": 1)"));
  ASSERT_TRUE(on.ok()) << on.error().to_string();
  EXPECT_FALSE(on->layers[0].sliding);
  EXPECT_TRUE(on->layers[1].sliding);
  EXPECT_EQ(on->sliding_window, 8);
}

TEST(ArchitectureConfig, MistralWindowDefaultsToTransformers) {
  auto absent = parse_hf_config(config_json("MistralForCausalLM"));
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->sliding_window, 4096);
  EXPECT_TRUE(absent->layers[0].sliding);
  auto null = parse_hf_config(config_json("MistralForCausalLM", R"("sliding_window": null)"));
  ASSERT_TRUE(null.ok());
  EXPECT_FALSE(null->layers[0].sliding);
}

TEST(ArchitectureConfig, Phi3LongropeFactorsAndAttentionFactor) {
  const std::string factors = R"([1.0, 1.0, 1.0], "long_factor": [2.0, 3.0, 4.0])";
  auto c = parse_hf_config(config_json("Phi3ForCausalLM", R"("head_dim": null, "hidden_size": 32,
      "partial_rotary_factor": 0.75, "original_max_position_embeddings": 32,
      "rope_scaling": {"type": "longrope", "short_factor": )" + factors + "}"));
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->rotary_dim, 6);
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 4.0);  // max_position_embeddings / original
  EXPECT_NEAR(rope_attention_factor(*c), std::sqrt(1 + std::log(4.0) / std::log(32.0)), 1e-12);
  auto short_inv = rope_inverse_frequencies(*c, 32);
  auto long_inv = rope_inverse_frequencies(*c, 33);
  ASSERT_TRUE(short_inv.ok() && long_inv.ok());
  EXPECT_NEAR((*long_inv)[2] * 4.0, (*short_inv)[2], 1e-15);  // long factor 4 vs short 1
}

// ---- refused fields: one test each ------------------------------------------------------------

TEST(ArchitectureRefusals, UnknownActivation) {
  const std::string message = refusal(config_json("LlamaForCausalLM", R"("hidden_act": "relu")"));
  EXPECT_CONTAINS(message, R"(config.json: hidden_act = "relu" is not supported)");
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForCausalLM", R"("hidden_activation": "gelu_fast")")),
                  R"(hidden_activation = "gelu_fast")");
}

TEST(ArchitectureRefusals, RopeScalingTypes) {
  for (const char* type : {"yarn", "dynamic", "su", "proportional"})
    EXPECT_CONTAINS(refusal(config_json("Qwen3ForCausalLM", std::string(R"("rope_scaling": {"rope_type": ")") + type +
                                                                 R"(", "factor": 4.0})")),
                    std::string("rope_scaling: type '") + type + "' is not supported");
}

TEST(ArchitectureRefusals, RopeScalingKeysATypeDoesNotRead) {
  EXPECT_CONTAINS(refusal(config_json("Phi3ForCausalLM", R"("head_dim": null, "rope_scaling": {"type": "longrope",
      "short_factor": [1, 1], "long_factor": [1, 1], "short_mscale": 1.2})")),
                  "key 'short_mscale' = 1.2 is not supported with type 'longrope'");
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("rope_scaling": {"type": "linear", "factor": 2,
      "original_max_position_embeddings": 64})")),
                  "key 'original_max_position_embeddings' = 64 is not supported with type 'linear'");
}

TEST(ArchitectureRefusals, Llama3ScalingWithOnlyAFactorNamesTheMissingKeys) {
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("rope_scaling": {"rope_type": "llama3", "factor": 8})"),
                          ErrorCode::kInvalidArgument),
                  "(missing: low_freq_factor, high_freq_factor, original_max_position_embeddings)");
}

TEST(ArchitectureRefusals, PartialRotaryOutsidePhi3) {
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("partial_rotary_factor": 0.5)")),
                  "partial_rotary_factor = 0.5 is not supported for LlamaForCausalLM");
  EXPECT_CONTAINS(refusal(config_json("Qwen3ForCausalLM", R"("rope_parameters": {"rope_type": "default",
      "rope_theta": 10000.0, "partial_rotary_factor": 0.25})")),
                  "partial_rotary_factor = 0.25");
}

TEST(ArchitectureRefusals, LogitSoftCapping) {
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForCausalLM", R"("final_logit_softcapping": 30.0)")),
                  "final_logit_softcapping = 30.0 is not supported");
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForCausalLM", R"("attn_logit_softcapping": 50.0)")),
                  "attn_logit_softcapping = 50.0 is not supported");
}

TEST(ArchitectureRefusals, BidirectionalAttention) {
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForCausalLM", R"("use_bidirectional_attention": true)")),
                  "use_bidirectional_attention = true is not supported");
}

TEST(ArchitectureRefusals, UnknownLayerType) {
  EXPECT_CONTAINS(refusal(config_json("Qwen3ForCausalLM", R"("layer_types": ["full_attention", "chunked_attention"])")),
                  R"(layer_types[1] = "chunked_attention" is not supported)");
}

TEST(ArchitectureRefusals, ScaledRopeOnGemmaSlidingLayers) {
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForCausalLM", R"("rope_parameters": {"full_attention": {"rope_type":
      "default"}, "sliding_attention": {"rope_type": "linear", "factor": 2.0}})")),
                  "sliding_attention: rope type 'linear' is not supported");
}

TEST(ArchitectureRefusals, MultimodalGemma3AndUnknownArchitectures) {
  EXPECT_CONTAINS(refusal(config_json("Gemma3ForConditionalGeneration")),
                  "'Gemma3ForConditionalGeneration' is a multimodal");
  EXPECT_CONTAINS(refusal(config_json("Gemma2ForCausalLM")), "architecture 'Gemma2ForCausalLM' is not supported");
  EXPECT_CONTAINS(refusal(R"({"model_type": "gpt2", "vocab_size": 4})", ErrorCode::kInvalidArgument),
                  "model_type 'gpt2' names no supported architecture");
}

TEST(ArchitectureRefusals, QuantizedCheckpoints) {
  EXPECT_CONTAINS(refusal(config_json("Qwen3ForCausalLM", R"("quantization_config": {"quant_method": "gptq", "bits": 4})")),
                  "quantization_config = {\"bits\":4,\"quant_method\":\"gptq\"} is not supported");
}

TEST(ArchitectureRefusals, NoPeListOfTheWrongShape) {
  EXPECT_CONTAINS(refusal(config_json("SmolLM3ForCausalLM", R"("head_dim": null, "no_rope_layers": [1])"),
                          ErrorCode::kInvalidArgument),
                  "no_rope_layers = [1] is invalid");
}

// ---- sizes -------------------------------------------------------------------------------------

TEST(ArchitectureSizes, ImplausibleLayerCountsAreRefusedBeforeAllocating) {
  for (const char* layers : {"10000000", "2147483647", "1099511627776"}) {
    const std::string message = refusal(config_json("LlamaForCausalLM", std::string("\"num_hidden_layers\": ") + layers),
                                        ErrorCode::kInvalidArgument);
    EXPECT_CONTAINS(message, std::string("key 'num_hidden_layers' = ") + layers + " is implausibly large");
  }
}

TEST(ArchitectureSizes, HugeValuesAreReportedAsWritten) {
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("hidden_size": 9223372036854775808)"),
                          ErrorCode::kInvalidArgument),
                  "key 'hidden_size' = 9223372036854775808 does not fit in a 64-bit integer");
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("vocab_size": 18446744073709551615)"),
                          ErrorCode::kInvalidArgument),
                  "key 'vocab_size' = 18446744073709551615 does not fit");
  EXPECT_CONTAINS(refusal(config_json("LlamaForCausalLM", R"("hidden_size": 1099511627776)"),
                          ErrorCode::kInvalidArgument),
                  "key 'hidden_size' = 1099511627776 is implausibly large");
}

using testing::ScratchDir;

void replace_in_file(const std::string& path, const std::string& from, const std::string& to) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  std::ofstream(path, std::ios::trunc) << s;
}

TEST(ArchitectureSizes, MoreLayersThanTheCheckpointHoldsAreRefusedFirst) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  fixtures::FixtureConfig fixture;  // two layers
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, fixture).ok());
  replace_in_file(dir + "/config.json", "\"num_hidden_layers\": 2", "\"num_hidden_layers\": 1000");
  auto loaded = load_checkpoint(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "config.json: num_hidden_layers = 1000, but checkpoint");
  EXPECT_CONTAINS(loaded.error().message(), "holds tensors for 2 layers");
}

TEST(ArchitectureSizes, BadGenerationConfigIdsNameThatFile) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  fixtures::FixtureConfig fixture;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, fixture).ok());
  std::ofstream(dir + "/generation_config.json", std::ios::trunc) << R"({"bos_token_id": 100000})";
  auto loaded = load_checkpoint(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "generation_config.json: bos_token_id 100000 is outside the vocabulary");
  std::ofstream(dir + "/generation_config.json", std::ios::trunc) << R"({"eos_token_id": [2, 70000]})";
  loaded = load_checkpoint(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "generation_config.json: eos_token_id 70000 is outside the vocabulary");
}

TEST(ArchitectureTies, UntiedConfigWithoutLmHeadNamesTheTensor) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  fixtures::FixtureConfig fixture;
  fixture.tie_word_embeddings = true;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, fixture).ok());
  replace_in_file(dir + "/config.json", "\"tie_word_embeddings\": true", "\"tie_word_embeddings\": false");
  auto loaded = load_checkpoint(dir);
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "missing tensor 'lm_head.weight'");
}

}  // namespace
}  // namespace kestrel::exporter

namespace kestrel::exporter {
namespace {

// ---- the config shapes real checkpoints ship ----------------------------------------------------

std::string repeated(const std::string& item, int count) {
  std::string out;
  for (int i = 0; i < count; ++i) out += (i ? ", " : "") + item;
  return out;
}

TEST(RealConfigs, Qwen3_0_6B) {
  auto c = parse_hf_config(R"({"architectures": ["Qwen3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128,
      "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
      "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
      "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8, "rms_norm_eps": 1e-06,
      "rope_scaling": null, "rope_theta": 1000000, "sliding_window": null, "tie_word_embeddings": true,
      "torch_dtype": "bfloat16", "transformers_version": "4.51.0", "use_cache": true,
      "use_sliding_window": false, "vocab_size": 151936})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_EQ(c->num_heads * c->head_dim, 2048);  // not hidden_size
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->sliding_window, 0);
}

TEST(RealConfigs, Gemma3_1B_And_270M) {
  auto one_b = parse_hf_config(R"({"architectures": ["Gemma3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
      "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
      "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
      "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
      "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1, "pad_token_id": 0,
      "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000, "rope_scaling": null,
      "rope_theta": 1000000, "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
      "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})");
  ASSERT_TRUE(one_b.ok()) << one_b.error().to_string();
  EXPECT_EQ(one_b->sliding_window, 512);
  int full = 0;
  for (const LayerSpec& layer : one_b->layers) full += !layer.sliding;
  EXPECT_EQ(full, 4);  // layers 5, 11, 17, 23
  EXPECT_EQ(one_b->eos_ids, (std::vector<int64_t>{1, 106}));
  const std::string five_one = repeated(R"("sliding_attention")", 5) + R"(, "full_attention")";
  auto small = parse_hf_config(R"({"_sliding_window_pattern": 6, "architectures": ["Gemma3ForCausalLM"],
      "attention_bias": false, "attn_logit_softcapping": null, "bos_token_id": 2, "eos_token_id": 1,
      "final_logit_softcapping": null, "head_dim": 256, "hidden_activation": "gelu_pytorch_tanh",
      "hidden_size": 640, "intermediate_size": 2048, "layer_types": [)" + repeated(five_one, 3) + R"(],
      "max_position_embeddings": 32768, "model_type": "gemma3_text", "num_attention_heads": 4,
      "num_hidden_layers": 18, "num_key_value_heads": 1, "pad_token_id": 0, "query_pre_attn_scalar": 256,
      "rms_norm_eps": 1e-06, "rope_local_base_freq": 10000.0, "rope_scaling": null, "rope_theta": 1000000.0,
      "sliding_window": 512, "torch_dtype": "bfloat16", "use_bidirectional_attention": false,
      "vocab_size": 262144})");
  ASSERT_TRUE(small.ok()) << small.error().to_string();
  EXPECT_FALSE(small->layers[5].sliding);
  EXPECT_TRUE(small->layers[6].sliding);
}

TEST(RealConfigs, Phi4MiniAndPhi35Mini) {
  const std::string factors = "[" + repeated("1.0", 48) + "]";
  auto phi4 = parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 199999, "embd_pdrop": 0.0, "eos_token_id": 199999,
      "full_attn_mod": 1, "hidden_act": "silu", "hidden_size": 3072, "initializer_range": 0.02,
      "intermediate_size": 8192, "interpolate_factor": 1, "lm_head_bias": false, "max_position_embeddings": 131072,
      "mlp_bias": false, "model_type": "phi3", "num_attention_heads": 24, "num_hidden_layers": 32,
      "num_key_value_heads": 8, "original_max_position_embeddings": 4096, "pad_token_id": 199999,
      "partial_rotary_factor": 0.75, "resid_pdrop": 0.0, "rms_norm_eps": 1e-05, "rope_scaling": {"long_factor": )" +
                              factors + R"(, "short_factor": )" + factors + R"(, "type": "longrope"},
      "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
      "use_cache": true, "vocab_size": 200064})");
  ASSERT_TRUE(phi4.ok()) << phi4.error().to_string();
  EXPECT_EQ(phi4->head_dim, 128);
  EXPECT_EQ(phi4->rotary_dim, 96);
  EXPECT_EQ(phi4->rope_scaling.type, "longrope");
  EXPECT_DOUBLE_EQ(phi4->rope_scaling.factor, 32.0);
  EXPECT_EQ(phi4->rope_scaling.original_max_position_embeddings, 4096);
  auto phi35 = parse_hf_config(R"({"architectures": ["Phi3ForCausalLM"], "hidden_size": 3072,
      "intermediate_size": 8192, "max_position_embeddings": 131072, "model_type": "phi3",
      "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
      "original_max_position_embeddings": 4096, "rms_norm_eps": 1e-05, "rope_scaling": {"long_factor": )" +
                               factors + R"(, "short_factor": )" + factors + R"(, "type": "longrope"},
      "rope_theta": 10000.0, "sliding_window": 262144, "tie_word_embeddings": false, "vocab_size": 32064})");
  ASSERT_TRUE(phi35.ok()) << phi35.error().to_string();
  EXPECT_EQ(phi35->rotary_dim, 96);  // head_dim 96, whole heads rotate
}

TEST(RealConfigs, Llama32_1BAndSmolLM3) {
  auto llama = parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
      "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192, "max_position_embeddings": 131072,
      "mlp_bias": false, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
      "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"factor": 32.0,
      "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192,
      "rope_type": "llama3"}, "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
      "use_cache": true, "vocab_size": 128256})");
  ASSERT_TRUE(llama.ok()) << llama.error().to_string();
  EXPECT_EQ(llama->rope_scaling.type, "llama3");
  const std::string nope = repeated("1, 1, 1, 0", 9);
  auto smol = parse_hf_config(R"({"architectures": ["SmolLM3ForCausalLM"], "attention_bias": false,
      "bos_token_id": null, "eos_token_id": 128012, "hidden_act": "silu", "hidden_size": 2048,
      "intermediate_size": 11008, "layer_types": [)" + repeated(R"("full_attention")", 36) + R"(],
      "max_position_embeddings": 65536, "max_window_layers": 28, "mlp_bias": false, "model_type": "smollm3",
      "no_rope_layer_interval": 4, "no_rope_layers": [)" + nope + R"(], "num_attention_heads": 16,
      "num_hidden_layers": 36, "num_key_value_heads": 4, "pad_token_id": 128004, "pretraining_tp": 2,
      "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 5000000.0, "sliding_window": null,
      "use_cache": false, "use_sliding_window": false, "vocab_size": 128256})");
  ASSERT_TRUE(smol.ok()) << smol.error().to_string();
  EXPECT_FALSE(smol->layers[3].rope);
  EXPECT_TRUE(smol->layers[4].rope);
  EXPECT_EQ(smol->bos_id, -1);
}

}  // namespace
}  // namespace kestrel::exporter
