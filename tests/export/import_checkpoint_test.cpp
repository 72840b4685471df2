// Checkpoint importers: round trips of every fixture variant, config parsing, mmap views,
// and convert_tensor against a naive reference.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "kestrel/export/checkpoint.h"
#include "export/scratch_dir.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"

namespace kestrel::exporter {
namespace {

namespace fs = std::filesystem;
using fixtures::FixtureConfig;

// FNV-1a over the bytes of the default FixtureConfig's tensors.
constexpr uint64_t kGoldenFixtureHash = 0x6269b1823ee7e002ull;

using TempDir = testing::ScratchDir;

// llama2.c tokenizer.bin: max_token_length, then per token a float score, an int32 length, bytes.
std::vector<uint8_t> make_tokenizer_bin(int64_t vocab_size) {
  std::vector<std::string> tokens;
  for (int64_t i = 0; i < vocab_size; ++i) tokens.push_back("tok" + std::to_string(i));
  int32_t max_len = 0;
  for (const auto& t : tokens) max_len = std::max<int32_t>(max_len, static_cast<int32_t>(t.size()));
  std::vector<uint8_t> out;
  const auto put = [&](const void* p, size_t n) {
    const size_t at = out.size();
    out.resize(at + n);
    std::memcpy(out.data() + at, p, n);
  };
  put(&max_len, 4);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const float score = -static_cast<float>(i);
    const int32_t len = static_cast<int32_t>(tokens[i].size());
    put(&score, 4);
    put(&len, 4);
    put(tokens[i].data(), tokens[i].size());
  }
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

// [begin, end) of every mapping of `path` in this process.
std::vector<std::pair<uintptr_t, uintptr_t>> mappings_of(const std::string& path) {
  const std::string canonical = fs::canonical(path).string();
  std::ifstream maps("/proc/self/maps");
  std::vector<std::pair<uintptr_t, uintptr_t>> out;
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() < canonical.size() ||
        line.compare(line.size() - canonical.size(), canonical.size(), canonical) != 0)
      continue;
    std::istringstream in(line);
    std::string range;
    in >> range;
    const size_t dash = range.find('-');
    out.emplace_back(std::stoull(range.substr(0, dash), nullptr, 16),
                     std::stoull(range.substr(dash + 1), nullptr, 16));
  }
  return out;
}

bool inside_mapping(const std::string& file, std::span<const uint8_t> bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  for (const auto& [lo, hi] : mappings_of(file))
    if (begin >= lo && begin + bytes.size() <= hi) return true;
  return false;
}

// Every fixture tensor comes back byte for byte, with its dtype and shape, and nothing else.
void expect_round_trip(const Checkpoint& checkpoint, const FixtureConfig& config) {
  FixtureConfig expected_config = config;
  auto expected = fixtures::make_fixture_tensors(expected_config);
  ASSERT_TRUE(expected.ok()) << expected.error().to_string();
  std::set<std::string> expected_names;
  for (const auto& entry : *expected) {
    expected_names.insert(entry.name);
    auto tensor = checkpoint.tensor(entry.name);
    ASSERT_TRUE(tensor.ok()) << tensor.error().to_string();
    EXPECT_EQ(tensor->name, entry.name);
    EXPECT_EQ(tensor->dtype, entry.dtype) << entry.name;
    EXPECT_EQ(tensor->shape, entry.shape) << entry.name;
    ASSERT_EQ(tensor->bytes.size(), entry.data.size()) << entry.name;
    EXPECT_EQ(std::memcmp(tensor->bytes.data(), entry.data.data(), entry.data.size()), 0) << entry.name;
  }
  const auto names = checkpoint.tensor_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), expected_names);
  // Every tensor the config requires is among them.
  for (const auto& req : required_tensors(checkpoint.config())) EXPECT_TRUE(checkpoint.has_tensor(req.name)) << req.name;
}

void expect_hf_config(const ModelConfig& c, const FixtureConfig& f) {
  EXPECT_EQ(c.architecture, f.architecture);
  EXPECT_EQ(c.vocab_size, f.vocab_size);
  EXPECT_EQ(c.hidden_size, f.hidden_size);
  EXPECT_EQ(c.intermediate_size, f.intermediate_size);
  EXPECT_EQ(c.num_layers, f.num_layers);
  EXPECT_EQ(c.num_heads, f.num_heads);
  EXPECT_EQ(c.num_kv_heads, f.num_kv_heads);
  EXPECT_EQ(c.head_dim, f.hidden_size / f.num_heads);
  EXPECT_EQ(c.max_position_embeddings, f.max_position_embeddings);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, f.rms_norm_eps);
  EXPECT_DOUBLE_EQ(c.rope_theta, f.rope_theta);
  EXPECT_EQ(c.tie_word_embeddings, f.tie_word_embeddings);
  EXPECT_EQ(c.attention_bias, f.attention_bias || f.architecture == "Qwen2ForCausalLM");
  EXPECT_EQ(c.hidden_act, "silu");
  EXPECT_EQ(c.rope_style, "half");
  EXPECT_EQ(c.bos_id, f.bos_id);
  EXPECT_EQ(c.eos_ids, std::vector<int64_t>{f.eos_id});
}

struct Variant {
  std::string name;
  FixtureConfig config;
};

std::vector<Variant> hf_variants() {
  std::vector<Variant> v;
  v.push_back({"LlamaGqaUntiedF32", {}});
  {
    FixtureConfig c;
    c.tie_word_embeddings = true;
    c.num_kv_heads = 4;  // plain multi-head attention
    v.push_back({"LlamaTiedMha", c});
  }
  {
    FixtureConfig c;
    c.architecture = "Qwen2ForCausalLM";
    c.tie_word_embeddings = true;
    c.num_kv_heads = 1;
    c.rope_theta = 1000000;
    v.push_back({"Qwen2Bias", c});
  }
  {
    FixtureConfig c;
    c.dtype = DType::kBF16;
    v.push_back({"Bf16", c});
  }
  {
    FixtureConfig c;
    c.dtype = DType::kF16;
    c.seed = 7;
    v.push_back({"F16", c});
  }
  {
    FixtureConfig c;
    c.shards = 3;
    c.num_layers = 3;
    v.push_back({"Sharded", c});
  }
  {
    FixtureConfig c;
    c.llama3_rope_scaling = true;
    c.rope_theta = 500000;
    c.max_position_embeddings = 512;
    v.push_back({"Llama3RopeScaling", c});
  }
  {
    FixtureConfig c;
    c.architecture = "MistralForCausalLM";
    c.sliding_window = 128;
    v.push_back({"MistralSlidingWindow", c});
  }
  {
    FixtureConfig c;
    c.attention_bias = true;
    c.dtype = DType::kBF16;
    c.shards = 2;
    v.push_back({"LlamaBiasBf16Sharded", c});
  }
  return v;
}

class ImportHfRoundTrip : public ::testing::TestWithParam<Variant> {};

TEST_P(ImportHfRoundTrip, TensorsAndConfigSurvive) {
  const FixtureConfig& f = GetParam().config;
  TempDir tmp;
  const std::string dir = tmp / "model";
  // Export checks the tokenizer with the runner's parser, so it must be a real one.
  const std::string tokenizer = fixtures::build_byte_level_bpe_tokenizer_json("a small text", f.vocab_size, {"<s>"});
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, f, tokenizer).ok());
  auto checkpoint = load_checkpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  expect_hf_config(checkpoint->config(), f);
  expect_round_trip(*checkpoint, f);
  EXPECT_EQ(checkpoint->source(), dir);
  EXPECT_EQ(checkpoint->tokenizer_format(), TokenizerFormat::kHfJson);
  EXPECT_EQ(std::string(checkpoint->tokenizer_bytes().begin(), checkpoint->tokenizer_bytes().end()),
            tokenizer);
  EXPECT_EQ(checkpoint->has_tensor("lm_head.weight"), !f.tie_word_embeddings);
  const bool bias = checkpoint->config().attention_bias;
  EXPECT_EQ(checkpoint->has_tensor("model.layers.0.self_attn.k_proj.bias"), bias);

  if (f.llama3_rope_scaling) {
    const RopeScaling& s = checkpoint->config().rope_scaling;
    EXPECT_EQ(s.type, "llama3");
    EXPECT_DOUBLE_EQ(s.factor, 8);
    EXPECT_DOUBLE_EQ(s.low_freq_factor, 1);
    EXPECT_DOUBLE_EQ(s.high_freq_factor, 4);
    EXPECT_EQ(s.original_max_position_embeddings, f.max_position_embeddings / 4);
  } else {
    EXPECT_EQ(checkpoint->config().rope_scaling.type, "none");
  }
  EXPECT_EQ(checkpoint->config().sliding_window,
            f.architecture == "MistralForCausalLM" ? f.sliding_window : 0);

  // Tensors are views into the mapped files, and the file names are recorded.
  std::set<std::string> files;
  for (const auto& name : checkpoint->tensor_names()) {
    auto tensor = checkpoint->tensor(name);
    ASSERT_TRUE(tensor.ok());
    const std::string file = checkpoint->tensor_file(name);
    files.insert(file);
    EXPECT_TRUE(inside_mapping(dir + "/" + file, tensor->bytes)) << name << " is not inside " << file;
  }
  if (f.shards == 1) {
    EXPECT_EQ(files, std::set<std::string>{"model.safetensors"});
  } else {
    EXPECT_EQ(files.size(), static_cast<size_t>(f.shards));
    EXPECT_TRUE(fs::exists(dir + "/model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(dir + "/model.safetensors"));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, ImportHfRoundTrip, ::testing::ValuesIn(hf_variants()),
                         [](const auto& info) { return info.param.name; });

TEST(ImportCheckpoint, KeepaliveOutlivesTheCheckpoint) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, {}).ok());
  std::shared_ptr<const void> keepalive;
  std::span<const uint8_t> view;
  std::vector<uint8_t> copy;
  {
    auto checkpoint = load_checkpoint(dir);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
    EXPECT_EQ(checkpoint->tokenizer_format(), TokenizerFormat::kNone);
    EXPECT_TRUE(checkpoint->tokenizer_bytes().empty());
    auto tensor = checkpoint->tensor("model.norm.weight");
    ASSERT_TRUE(tensor.ok());
    view = tensor->bytes;
    copy.assign(view.begin(), view.end());
    keepalive = checkpoint->keepalive();
    // A second lookup hands out the same bytes, not a copy.
    EXPECT_EQ(checkpoint->tensor("model.norm.weight")->bytes.data(), view.data());
  }
  ASSERT_TRUE(keepalive);
  EXPECT_TRUE(inside_mapping(dir + "/model.safetensors", view));
  EXPECT_EQ(std::memcmp(view.data(), copy.data(), copy.size()), 0);
  keepalive.reset();
  EXPECT_TRUE(mappings_of(dir + "/model.safetensors").empty());
}

TEST(ImportCheckpoint, AFileOfTheDirectoryStandsForIt) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, {}).ok());
  for (const char* file : {"config.json", "model.safetensors"}) {
    auto checkpoint = load_checkpoint(dir + "/" + file);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
    EXPECT_EQ(checkpoint->config().architecture, "LlamaForCausalLM");
  }
}

TEST(ImportCheckpoint, UnknownTensorNamesTheTensorAndTheCheckpoint) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, {}).ok());
  auto checkpoint = load_checkpoint(dir);
  ASSERT_TRUE(checkpoint.ok());
  auto missing = checkpoint->tensor("model.layers.9.mlp.up_proj.weight");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find("'model.layers.9.mlp.up_proj.weight'"), std::string::npos);
  EXPECT_NE(missing.error().message().find(dir), std::string::npos);
  EXPECT_EQ(checkpoint->tensor_file("nope"), "");
}

TEST(ImportCheckpoint, ExtraTensorsStayAccessibleAndUnsupportedDtypesSayWhich) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  FixtureConfig f;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, f).ok());
  auto tensors = fixtures::make_fixture_tensors(f);
  ASSERT_TRUE(tensors.ok());
  std::vector<uint8_t> ids(4 * 8);
  for (int i = 0; i < 8; ++i) std::memcpy(ids.data() + 4 * i, &i, 4);
  tensors->push_back({"model.extra.position_ids", DType::kI32, {8}, ids});
  ASSERT_TRUE(fixtures::write_safetensors(dir + "/model.safetensors", *tensors).ok());
  auto checkpoint = load_checkpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  auto extra = checkpoint->tensor("model.extra.position_ids");
  ASSERT_TRUE(extra.ok());
  EXPECT_EQ(extra->dtype, DType::kI32);
  EXPECT_EQ(std::memcmp(extra->bytes.data(), ids.data(), ids.size()), 0);
}

TEST(ImportCheckpoint, Llama2cRoundTripUntiedAndTied) {
  for (bool tied : {false, true}) {
    SCOPED_TRACE(tied ? "tied" : "untied");
    TempDir tmp;
    FixtureConfig f;
    f.tie_word_embeddings = tied;
    f.vocab_size = 300;
    f.num_kv_heads = tied ? 4 : 2;
    f.max_position_embeddings = 128;
    const std::string bin = tmp / "stories.bin";
    const std::string tok = tmp / "tokenizer.bin";
    ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin, f).ok());
    const auto tokenizer = make_tokenizer_bin(f.vocab_size);
    write_bytes(tok, tokenizer);

    // Exact legacy size: header, weights, both freq_cis tables, classifier when untied.
    const int64_t D = f.hidden_size, H = f.intermediate_size, L = f.num_layers, V = f.vocab_size;
    const int64_t kv = f.num_kv_heads * (D / f.num_heads);
    const int64_t floats = V * D + L * (2 * D + 2 * D * D + 2 * kv * D + 3 * H * D) + D +
                           f.max_position_embeddings * (D / f.num_heads) + (tied ? 0 : V * D);
    EXPECT_EQ(fs::file_size(bin), static_cast<uintmax_t>(28 + 4 * floats));

    CheckpointOptions options;
    options.tokenizer_path = tok;
    auto checkpoint = load_checkpoint(bin, options);
    ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
    const ModelConfig& c = checkpoint->config();
    EXPECT_EQ(c.architecture, "llama2c");
    EXPECT_EQ(c.vocab_size, V);
    EXPECT_EQ(c.hidden_size, D);
    EXPECT_EQ(c.intermediate_size, H);
    EXPECT_EQ(c.num_layers, L);
    EXPECT_EQ(c.num_heads, f.num_heads);
    EXPECT_EQ(c.num_kv_heads, f.num_kv_heads);
    EXPECT_EQ(c.head_dim, D / f.num_heads);
    EXPECT_EQ(c.max_position_embeddings, f.max_position_embeddings);
    EXPECT_EQ(c.tie_word_embeddings, tied);
    EXPECT_EQ(c.rope_style, "interleaved");
    EXPECT_DOUBLE_EQ(c.rope_theta, 10000);
    EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
    EXPECT_EQ(c.bos_id, 1);
    EXPECT_EQ(c.eos_ids, std::vector<int64_t>{2});
    EXPECT_FALSE(c.attention_bias);
    EXPECT_EQ(c.rope_scaling.type, "none");
    expect_round_trip(*checkpoint, f);
    EXPECT_EQ(checkpoint->tokenizer_format(), TokenizerFormat::kLlama2c);
    EXPECT_EQ(checkpoint->tokenizer_bytes(), tokenizer);
    for (const auto& name : checkpoint->tensor_names())
      EXPECT_TRUE(inside_mapping(bin, checkpoint->tensor(name)->bytes)) << name;
  }
}

TEST(ImportCheckpoint, ExplicitTokenizerReplacesTokenizerJson) {
  TempDir tmp;
  const std::string dir = tmp / "model";
  FixtureConfig f;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, f, "{\"in\": \"dir\"}").ok());
  const std::string other = fixtures::build_byte_level_bpe_tokenizer_json("other text", f.vocab_size, {"<s>"});
  write_bytes(tmp / "other.json", std::vector<uint8_t>(other.begin(), other.end()));
  CheckpointOptions options;
  options.tokenizer_path = tmp / "other.json";
  auto checkpoint = load_checkpoint(dir, options);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  EXPECT_EQ(checkpoint->tokenizer_bytes(), std::vector<uint8_t>(other.begin(), other.end()));
  // Without the replacement, the directory's own (damaged) tokenizer.json is an error.
  auto damaged = load_checkpoint(dir);
  ASSERT_FALSE(damaged.ok());
  EXPECT_NE(damaged.error().message().find("tokenizer.json"), std::string::npos) << damaged.error().message();
}

// ---- config.json parsing ----

TEST(ImportConfig, DefaultsFollowHuggingFace) {
  auto c = parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 32000,
      "hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 32,
      "num_attention_heads": 32, "rope_scaling": null, "bos_token_id": 1, "eos_token_id": 2})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->num_kv_heads, 32);
  EXPECT_EQ(c->head_dim, 128);
  EXPECT_DOUBLE_EQ(c->rope_theta, 10000);
  EXPECT_DOUBLE_EQ(c->rms_norm_eps, 1e-6);
  EXPECT_EQ(c->max_position_embeddings, 2048);
  EXPECT_FALSE(c->tie_word_embeddings);
  EXPECT_FALSE(c->attention_bias);
  EXPECT_EQ(c->hidden_act, "silu");
  EXPECT_EQ(c->rope_scaling.type, "none");
  EXPECT_EQ(c->bos_id, 1);
  EXPECT_EQ(c->eos_ids, std::vector<int64_t>{2});
}

TEST(ImportConfig, Llama31StyleConfigWithGenerationConfig) {
  const char* config = R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 128256,
      "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
      "max_position_embeddings": 131072, "rms_norm_eps": 1e-05, "rope_theta": 500000.0,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "tie_word_embeddings": true, "bos_token_id": 128000, "eos_token_id": 128001})";
  const char* generation = R"({"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]})";
  auto c = parse_hf_config(config, generation);
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->num_kv_heads, 8);
  EXPECT_EQ(c->head_dim, 64);
  EXPECT_DOUBLE_EQ(c->rope_theta, 500000);
  EXPECT_EQ(c->rope_scaling.type, "llama3");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 32);
  EXPECT_EQ(c->rope_scaling.original_max_position_embeddings, 8192);
  EXPECT_TRUE(c->tie_word_embeddings);
  EXPECT_EQ(c->bos_id, 128000);
  EXPECT_EQ(c->eos_ids, (std::vector<int64_t>{128001, 128008, 128009}));

  // generation_config ids come first; config ids it lacks are appended.
  auto merged = parse_hf_config(R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 100,
      "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
      "num_attention_heads": 2, "eos_token_id": [5, 7]})",
                                R"({"bos_token_id": 3, "eos_token_id": 9})");
  ASSERT_TRUE(merged.ok()) << merged.error().to_string();
  EXPECT_EQ(merged->bos_id, 3);
  EXPECT_EQ(merged->eos_ids, (std::vector<int64_t>{9, 5, 7}));
}

TEST(ImportConfig, Qwen2AndMistralSpecifics) {
  auto q = parse_hf_config(R"({"architectures": ["Qwen2ForCausalLM"], "vocab_size": 151936,
      "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
      "num_attention_heads": 14, "num_key_value_heads": 2, "rope_theta": 1000000.0,
      "sliding_window": 32768, "use_sliding_window": false, "tie_word_embeddings": true,
      "bos_token_id": 151643, "eos_token_id": 151643})");
  ASSERT_TRUE(q.ok()) << q.error().to_string();
  EXPECT_TRUE(q->attention_bias);
  EXPECT_EQ(q->head_dim, 64);
  EXPECT_EQ(q->sliding_window, 0);
  EXPECT_EQ(q->max_position_embeddings, 32768);

  auto m = parse_hf_config(R"({"architectures": ["MistralForCausalLM"], "vocab_size": 32768,
      "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
      "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": null,
      "sliding_window": null, "max_position_embeddings": 32768})");
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  EXPECT_FALSE(m->attention_bias);
  EXPECT_EQ(m->head_dim, 128);
  EXPECT_EQ(m->sliding_window, 0);
}

TEST(ImportConfig, LinearScalingAndModelTypeFallback) {
  auto c = parse_hf_config(R"({"model_type": "llama", "vocab_size": 100, "hidden_size": 8,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
      "rope_scaling": {"type": "linear", "factor": 4}})");
  ASSERT_TRUE(c.ok()) << c.error().to_string();
  EXPECT_EQ(c->architecture, "LlamaForCausalLM");
  EXPECT_EQ(c->rope_scaling.type, "linear");
  EXPECT_DOUBLE_EQ(c->rope_scaling.factor, 4);
}

TEST(ImportConfig, ErrorsNameTheKey) {
  const std::string base = R"("architectures": ["LlamaForCausalLM"], "vocab_size": 100,
      "intermediate_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2)";
  struct Case {
    std::string json;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {"{" + base + "}", "missing key 'hidden_size'"},
      {"{" + base + R"(, "hidden_size": "8"})", "key 'hidden_size' must be an integer"},
      {"{" + base + R"(, "hidden_size": 9})", "hidden_size 9 is not a multiple of num_attention_heads 2"},
      {"{" + base + R"(, "hidden_size": 8, "num_key_value_heads": 3})", "not a multiple of num_key_value_heads 3"},
      {"{" + base + R"(, "hidden_size": 8, "rope_scaling": {"rope_type": "yarn", "factor": 2}})",
       "rope_scaling: type 'yarn' is not supported"},
      {"{" + base + R"(, "hidden_size": 8, "rope_scaling": {"rope_type": "llama3"}})",
       "rope_scaling: type 'llama3' needs factor, low_freq_factor, high_freq_factor, "
       "original_max_position_embeddings (missing: factor, low_freq_factor, high_freq_factor, "
       "original_max_position_embeddings)"},
      {"{" + base + R"(, "hidden_size": 8, "rope_scaling": {"rope_type": "llama3", "factor": 8}})",
       "(missing: low_freq_factor, high_freq_factor, original_max_position_embeddings)"},
      {"{" + base + R"(, "hidden_size": 8, "eos_token_id": "x"})", "key 'eos_token_id' must be an integer or a list"},
      {"{" + base + R"(, "hidden_size": 8, "eos_token_id": 100})", "eos_token_id 100 is outside the vocabulary"},
      {"{" + base + R"(, "hidden_size": 8, "tie_word_embeddings": 1})", "key 'tie_word_embeddings' must be true or false"},
      {"{" + base + R"(, "hidden_size": 8, "hidden_act": "relu"})", "hidden_act = \"relu\" is not supported"},
      {"{" + base + R"(, "hidden_size": 8,})", "invalid JSON"},
      {"[1, 2]", "must hold a JSON object"},
  };
  for (const Case& c : cases) {
    auto result = parse_hf_config(c.json);
    ASSERT_FALSE(result.ok()) << c.json;
    EXPECT_NE(result.error().message().find(c.needle), std::string::npos)
        << result.error().message() << "\nexpected: " << c.needle;
    EXPECT_EQ(result.error().message().rfind("config.json: ", 0), 0u) << result.error().message();
  }
  auto arch = parse_hf_config(R"({"architectures": ["GPT2LMHeadModel"]})");
  ASSERT_FALSE(arch.ok());
  EXPECT_EQ(arch.error().code(), ErrorCode::kUnsupported);
  EXPECT_EQ(arch.error().message(),
            "config.json: architecture 'GPT2LMHeadModel' is not supported (supported: "
            "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, "
            "Phi3ForCausalLM, SmolLM3ForCausalLM)");
  auto gen = parse_hf_config("{" + base + R"(, "hidden_size": 8})", "{oops");
  ASSERT_FALSE(gen.ok());
  EXPECT_NE(gen.error().message().find("generation_config.json: invalid JSON"), std::string::npos);
}

TEST(ImportConfig, RequiredTensorsFollowTheConfig) {
  ModelConfig c;
  EXPECT_TRUE(required_tensors(c).empty());  // no architecture, no names
  c.architecture = "LlamaForCausalLM";
  c.vocab_size = 10;
  c.hidden_size = 8;
  c.intermediate_size = 12;
  c.num_layers = 2;
  c.num_heads = 2;
  c.num_kv_heads = 1;
  c.head_dim = 4;
  c.attention_bias = true;
  auto reqs = required_tensors(c);
  EXPECT_EQ(reqs.size(), 1u + 2 * 12 + 1 + 1);
  c.o_proj_bias = true;
  c.mlp_bias = true;
  EXPECT_EQ(required_tensors(c).size(), 1u + 2 * (12 + 4) + 1 + 1);
  c.o_proj_bias = c.mlp_bias = false;
  EXPECT_EQ(reqs.front().name, "model.embed_tokens.weight");
  EXPECT_EQ(reqs.back().name, "lm_head.weight");
  bool found = false;
  for (const auto& r : reqs)
    if (r.name == "model.layers.1.self_attn.k_proj.weight") {
      found = true;
      EXPECT_EQ(r.shape, (std::vector<int64_t>{4, 8}));
    }
  EXPECT_TRUE(found);
  c.tie_word_embeddings = true;
  EXPECT_EQ(required_tensors(c).back().name, "model.norm.weight");
}

// ---- fixtures ----

TEST(ImportFixtures, DeterministicAndScaled) {
  FixtureConfig f;
  auto a = fixtures::make_fixture_tensors(f);
  auto b = fixtures::make_fixture_tensors(f);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (size_t i = 0; i < a->size(); ++i) EXPECT_EQ((*a)[i].data, (*b)[i].data) << (*a)[i].name;
  f.seed = 2;
  auto c = fixtures::make_fixture_tensors(f);
  ASSERT_TRUE(c.ok());
  EXPECT_NE((*a)[0].data, (*c)[0].data);

  // A golden value pins the generator across platforms: FNV-1a over every tensor's bytes.
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& t : *a)
    for (uint8_t byte : t.data) h = (h ^ byte) * 0x100000001b3ull;
  EXPECT_EQ(h, kGoldenFixtureHash) << std::hex << h;

  for (const auto& t : *a) {
    std::vector<float> v(t.data.size() / 4);
    std::memcpy(v.data(), t.data.data(), t.data.size());
    double sum = 0, sq = 0;
    for (float x : v) {
      sum += x;
      sq += static_cast<double>(x) * x;
    }
    const double mean = sum / v.size(), stddev = std::sqrt(sq / v.size() - mean * mean);
    if (t.name.find("norm") != std::string::npos) {
      for (float x : v) {
        EXPECT_GE(x, 0.9f);
        EXPECT_LE(x, 1.1f);
      }
    } else {
      EXPECT_NEAR(stddev, f.init_scale, f.init_scale * 0.1) << t.name;
      EXPECT_NEAR(mean, 0, f.init_scale * 0.1) << t.name;
    }
  }
}

TEST(ImportFixtures, SafetensorsLayout) {
  std::vector<fixtures::SafetensorsEntry> entries = {
      {"a", DType::kF32, {2}, std::vector<uint8_t>(8, 1)},
      {"b", DType::kBF16, {3}, std::vector<uint8_t>(6, 2)},
  };
  auto bytes = fixtures::encode_safetensors(entries, {{"format", "pt"}});
  ASSERT_TRUE(bytes.ok());
  uint64_t n = 0;
  std::memcpy(&n, bytes->data(), 8);
  EXPECT_EQ((8 + n) % 64, 0u);
  EXPECT_EQ(bytes->size(), 8 + n + 14);
  const std::string header(bytes->begin() + 8, bytes->begin() + 8 + static_cast<long>(n));
  EXPECT_NE(header.find(R"("b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]})"), std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("__metadata__":{"format":"pt"})"), std::string::npos);
  entries[1].data.pop_back();
  EXPECT_FALSE(fixtures::encode_safetensors(entries).ok());
  FixtureConfig bad;
  bad.num_kv_heads = 3;
  EXPECT_FALSE(fixtures::make_fixture_tensors(bad).ok());
  FixtureConfig f16;
  f16.dtype = DType::kF16;
  TempDir tmp;
  EXPECT_FALSE(fixtures::write_llama2c_checkpoint(tmp / "x.bin", f16).ok());
}

// ---- convert_tensor ----

// Naive reference: the representable neighbours of `x` in a format with `mantissa` explicit
// bits, picked by exact distance, ties to even (normal range only).
uint32_t naive_round(float x, int mantissa_bits_dropped) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  const uint32_t step = 1u << mantissa_bits_dropped;
  const uint32_t down = bits & ~(step - 1);
  const uint32_t up = down + step;
  float fd, fu;
  std::memcpy(&fd, &down, 4);
  std::memcpy(&fu, &up, 4);
  const double dd = std::fabs(static_cast<double>(x) - fd), du = std::fabs(static_cast<double>(fu) - x);
  if (dd < du) return down;
  if (du < dd) return up;
  return ((down >> mantissa_bits_dropped) & 1) == 0 ? down : up;
}

std::vector<float> sample_values() {
  std::vector<float> v = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f, 3.14159f, 1e-3f, -2.5e-4f, 65504.0f, 1.0009765625f,
                          1.00048828125f /* an exact f16 tie */, 1.0f + 1.0f / 256 + 1.0f / 512};
  fixtures::SplitMix64 rng(42);
  for (int i = 0; i < 2000; ++i) v.push_back(rng.uniform_pm1() * 8.0f);
  return v;
}

CheckpointTensor f32_tensor(const std::vector<float>& values, std::vector<uint8_t>& storage) {
  storage.resize(values.size() * 4);
  std::memcpy(storage.data(), values.data(), storage.size());
  return {"t", DType::kF32, {static_cast<int64_t>(values.size())}, storage};
}

TEST(ImportConvert, F32ToBf16MatchesNaiveRounding) {
  const auto values = sample_values();
  std::vector<uint8_t> storage;
  auto out = convert_tensor(f32_tensor(values, storage), DType::kBF16);
  ASSERT_TRUE(out.ok());
  ASSERT_EQ(out->size(), values.size() * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t got;
    std::memcpy(&got, out->data() + 2 * i, 2);
    EXPECT_EQ(got, naive_round(values[i], 16) >> 16) << values[i];
  }
  // And back: bf16 widens exactly.
  CheckpointTensor bf16{"t", DType::kBF16, {static_cast<int64_t>(values.size())}, *out};
  auto wide = convert_tensor(bf16, DType::kF32);
  ASSERT_TRUE(wide.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    uint16_t half;
    std::memcpy(&half, out->data() + 2 * i, 2);
    const uint32_t expect = static_cast<uint32_t>(half) << 16;
    uint32_t got;
    std::memcpy(&got, wide->data() + 4 * i, 4);
    EXPECT_EQ(got, expect);
  }
}

TEST(ImportConvert, F32ToF16MatchesNaiveRounding) {
  const auto values = sample_values();
  std::vector<uint8_t> storage;
  auto out = convert_tensor(f32_tensor(values, storage), DType::kF16);
  ASSERT_TRUE(out.ok());
  for (size_t i = 0; i < values.size(); ++i) {
    const float x = values[i];
    uint16_t got;
    std::memcpy(&got, out->data() + 2 * i, 2);
    // Reference: round the f32 mantissa to 10 bits, then re-bias the exponent by hand.
    if (x == 0.0f || std::fabs(x) < 6.103515625e-05f) continue;  // normals only here
    const uint32_t r = naive_round(x, 13);
    const uint32_t sign = (r >> 16) & 0x8000;
    const int32_t exponent = static_cast<int32_t>((r >> 23) & 0xff) - 127 + 15;
    const uint16_t expect = static_cast<uint16_t>(sign | (exponent << 10) | ((r >> 13) & 0x3ff));
    EXPECT_EQ(got, expect) << x;
    // Widening back gives the rounded value exactly.
    CheckpointTensor h{"h", DType::kF16, {1}, std::span<const uint8_t>(out->data() + 2 * i, 2)};
    auto back = convert_tensor(h, DType::kF32);
    ASSERT_TRUE(back.ok());
    uint32_t back_bits;
    std::memcpy(&back_bits, back->data(), 4);
    EXPECT_EQ(back_bits, r) << x;
  }
}

TEST(ImportConvert, F16ToBf16AndIdentity) {
  // 1.5 and -0.375 in f16 -> bf16 exactly; identity copies bytes.
  const uint16_t f16[] = {0x3e00, 0xb600};
  CheckpointTensor t{"h", DType::kF16, {2}, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(f16), 4)};
  auto bf = convert_tensor(t, DType::kBF16);
  ASSERT_TRUE(bf.ok());
  uint16_t got[2];
  std::memcpy(got, bf->data(), 4);
  EXPECT_EQ(got[0], 0x3fc0);
  EXPECT_EQ(got[1], 0xbec0);
  auto same = convert_tensor(t, DType::kF16);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(std::memcmp(same->data(), f16, 4), 0);
  EXPECT_NE(same->data(), t.bytes.data());
}

TEST(ImportConvert, RejectsNonFloatAndBadSizes) {
  std::vector<uint8_t> bytes(12);
  auto i32 = convert_tensor({"ids", DType::kI32, {3}, bytes}, DType::kF32);
  ASSERT_FALSE(i32.ok());
  EXPECT_NE(i32.error().message().find("'ids'"), std::string::npos);
  EXPECT_FALSE(convert_tensor({"w", DType::kF32, {3}, bytes}, DType::kQ8).ok());
  auto size = convert_tensor({"w", DType::kF32, {4}, bytes}, DType::kF16);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().message().find("12 bytes"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::exporter
