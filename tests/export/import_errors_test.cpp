// Checkpoint importers on bad input: every failure is an error value whose message names the
// file and the tensor or key at fault.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "kestrel/export/checkpoint.h"
#include "export/scratch_dir.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "support/expect_contains.h"

namespace kestrel::exporter {
namespace {

namespace fs = std::filesystem;
using fixtures::FixtureConfig;

using testing::ScratchDir;
using testing::write_text;

// A safetensors file with a hand-written header and `data_bytes` bytes of data.
void write_raw_safetensors(const std::string& path, const std::string& header, size_t data_bytes,
                           uint64_t claimed_length = UINT64_MAX) {
  const uint64_t n = claimed_length == UINT64_MAX ? header.size() : claimed_length;
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i));
  bytes += header;
  bytes.append(data_bytes, '\x11');
  write_text(path, bytes);
}

void truncate_by(const std::string& path, uintmax_t bytes) {
  fs::resize_file(path, fs::file_size(path) - bytes);
}

// Loads `path` expecting failure; returns the message.
std::string load_error(const std::string& path, const CheckpointOptions& options = {},
                       ErrorCode* code = nullptr) {
  auto result = load_checkpoint(path, options);
  if (result.ok()) return "<loaded>";
  if (code) *code = result.error().code();
  return result.error().message();
}

class ImportHfErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_ / "model";
    ASSERT_TRUE(fixtures::write_hf_checkpoint(dir_, config_).ok());
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  // A one-tensor safetensors header for config-independent format checks.
  void raw(const std::string& header, size_t data_bytes, uint64_t claimed = UINT64_MAX) {
    write_raw_safetensors(file("model.safetensors"), header, data_bytes, claimed);
  }

  ScratchDir scratch_;
  FixtureConfig config_;
  std::string dir_;
};

TEST_F(ImportHfErrors, FileTooShortForTheHeaderLength) {
  write_text(file("model.safetensors"), "abcde");
  ErrorCode code;
  const std::string msg = load_error(dir_, {}, &code);
  EXPECT_EQ(code, ErrorCode::kCorrupt);
  EXPECT_CONTAINS(msg, "model.safetensors: file is 5 bytes, too short for the 8-byte header length");
  EXPECT_CONTAINS(msg, dir_);
}

TEST_F(ImportHfErrors, HeaderLengthBeyondTheFile) {
  raw(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 4, 1000);
  EXPECT_CONTAINS(load_error(dir_), "model.safetensors: header length 1000 exceeds the file size");
}

TEST_F(ImportHfErrors, TruncatedHeader) {
  // The real file cut in the middle of its JSON header.
  fs::resize_file(file("model.safetensors"), 40);
  EXPECT_CONTAINS(load_error(dir_), "model.safetensors: header length");
}

TEST_F(ImportHfErrors, TruncatedData) {
  truncate_by(file("model.safetensors"), 10);
  // Tensors are written in canonical order, so the last one (lm_head) is cut off.
  const std::string msg = load_error(dir_);
  EXPECT_CONTAINS(msg, "model.safetensors: tensor 'lm_head.weight' data_offsets [");
  EXPECT_CONTAINS(msg, "exceed the data area");
}

TEST_F(ImportHfErrors, BadJsonHeader) {
  raw(R"({"a": {"dtype": "F32", "shape": [1], )", 4);
  EXPECT_CONTAINS(load_error(dir_), "model.safetensors header: invalid JSON");
  raw(R"([1, 2, 3])", 4);
  EXPECT_CONTAINS(load_error(dir_), "model.safetensors: header must be a JSON object, got array");
}

TEST_F(ImportHfErrors, OffsetsOutOfRange) {
  raw(R"({"model.norm.weight": {"dtype": "F32", "shape": [16], "data_offsets": [100, 164]}})", 120);
  ErrorCode code;
  EXPECT_CONTAINS(load_error(dir_, {}, &code),
                  "model.safetensors: tensor 'model.norm.weight' data_offsets [100, 164) exceed the "
                  "data area (120 bytes)");
  EXPECT_EQ(code, ErrorCode::kCorrupt);
}

TEST_F(ImportHfErrors, OffsetsMismatchTheShape) {
  raw(R"({"model.norm.weight": {"dtype": "BF16", "shape": [2, 3], "data_offsets": [0, 16]}})", 16);
  EXPECT_CONTAINS(load_error(dir_),
                  "model.safetensors: tensor 'model.norm.weight' data_offsets [0, 16) hold 16 bytes, "
                  "but dtype BF16 and shape [2, 3] need 12");
  raw(R"({"x": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 16);
  EXPECT_CONTAINS(load_error(dir_), "tensor 'x' data_offsets [8, 4) end before they begin");
}

TEST_F(ImportHfErrors, OverlappingTensors) {
  raw(R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
          "b": {"dtype": "F32", "shape": [4], "data_offsets": [8, 24]}})",
      24);
  EXPECT_CONTAINS(load_error(dir_), "model.safetensors: tensors 'a' [0, 16) and 'b' [8, 24) overlap");
}

TEST_F(ImportHfErrors, MalformedEntries) {
  struct Case {
    std::string header;
    std::string needle;
  };
  const std::vector<Case> cases = {
      {R"({"a": 3})", "tensor 'a' must be an object"},
      {R"({"a": {"shape": [1], "data_offsets": [0, 4]}})", "tensor 'a' has no string 'dtype'"},
      {R"({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 4]}})", "tensor 'a' has unknown dtype 'Q4'"},
      {R"({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}})", "tensor 'a' shape [-1] must hold non-negative integers"},
      {R"({"a": {"dtype": "F32", "data_offsets": [0, 4]}})", "tensor 'a' has no 'shape' array"},
      {R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", "tensor 'a' needs 'data_offsets'"},
      {R"({"a": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 4]}})", "overflows"},
      {R"({"__metadata__": {"format": 1}})", "__metadata__ value 'format' must be a string"},
  };
  for (const Case& c : cases) {
    raw(c.header, 4);
    const std::string msg = load_error(dir_);
    EXPECT_CONTAINS(msg, "model.safetensors: ");
    EXPECT_CONTAINS(msg, c.needle);
  }
}

TEST_F(ImportHfErrors, MissingTensor) {
  auto tensors = fixtures::make_fixture_tensors(config_);
  ASSERT_TRUE(tensors.ok());
  std::erase_if(*tensors, [](const auto& t) { return t.name == "model.layers.1.mlp.up_proj.weight"; });
  ASSERT_TRUE(fixtures::write_safetensors(file("model.safetensors"), *tensors).ok());
  ErrorCode code;
  const std::string msg = load_error(dir_, {}, &code);
  EXPECT_EQ(code, ErrorCode::kNotFound);
  EXPECT_CONTAINS(msg, "is missing tensor 'model.layers.1.mlp.up_proj.weight' (expected shape [128, 64])");
  EXPECT_CONTAINS(msg, dir_);
}

TEST_F(ImportHfErrors, WrongShapeAndWrongDtype) {
  auto tensors = fixtures::make_fixture_tensors(config_);
  ASSERT_TRUE(tensors.ok());
  for (auto& t : *tensors)
    if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {64, 32};  // transposed
  ASSERT_TRUE(fixtures::write_safetensors(file("model.safetensors"), *tensors).ok());
  EXPECT_CONTAINS(load_error(dir_),
                  "model.safetensors: tensor 'model.layers.0.self_attn.k_proj.weight' has shape "
                  "[64, 32], but the config needs [32, 64]");

  for (auto& t : *tensors)
    if (t.name == "model.layers.0.self_attn.k_proj.weight") t.shape = {32, 64};
    else if (t.name == "model.norm.weight") t.dtype = DType::kI32;
  ASSERT_TRUE(fixtures::write_safetensors(file("model.safetensors"), *tensors).ok());
  EXPECT_CONTAINS(load_error(dir_),
                  "model.safetensors: tensor 'model.norm.weight' has dtype I32; weights must be F32, F16 or BF16");
}

TEST_F(ImportHfErrors, ConfigProblems) {
  const std::string good = [&] {
    std::ifstream in(file("config.json"));
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  std::string arch = good;
  arch.replace(arch.find("LlamaForCausalLM"), 16, "GPTNeoXForCausalLM");
  write_text(file("config.json"), arch);
  ErrorCode code;
  EXPECT_CONTAINS(load_error(dir_, {}, &code),
                  "config.json: architecture 'GPTNeoXForCausalLM' is not supported (supported: "
                  "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3ForCausalLM, "
                  "Phi3ForCausalLM, SmolLM3ForCausalLM)");
  EXPECT_EQ(code, ErrorCode::kUnsupported);

  write_text(file("config.json"), good.substr(0, good.size() / 2));
  EXPECT_CONTAINS(load_error(dir_), "config.json: invalid JSON");

  std::string hidden = good;
  hidden.replace(hidden.find("\"hidden_size\""), 13, "\"hidden_sizes\"");
  write_text(file("config.json"), hidden);
  EXPECT_CONTAINS(load_error(dir_), "config.json: missing key 'hidden_size'");

  // A config that disagrees with the weights is caught by the shape check.
  std::string inter = good;
  inter.replace(inter.find("\"intermediate_size\": 128"), 24, "\"intermediate_size\": 96");
  write_text(file("config.json"), inter);
  EXPECT_CONTAINS(load_error(dir_), "has shape [128, 64], but the config needs [96, 64]");

  write_text(file("config.json"), good);
  write_text(file("generation_config.json"), "{\"eos_token_id\": [1, \"x\"]}");
  EXPECT_CONTAINS(load_error(dir_), "generation_config.json: key 'eos_token_id' must be an integer or a list");

  fs::remove(file("generation_config.json"));
  EXPECT_EQ(load_error(dir_), "<loaded>");
  fs::remove(file("config.json"));
  EXPECT_CONTAINS(load_error(dir_, {}, &code), "has no config.json");
  EXPECT_EQ(code, ErrorCode::kNotFound);
}

TEST_F(ImportHfErrors, NoWeights) {
  fs::remove(file("model.safetensors"));
  EXPECT_CONTAINS(load_error(dir_), "has neither model.safetensors nor model.safetensors.index.json");
  write_text(file("pytorch_model.bin"), "x");
  EXPECT_CONTAINS(load_error(dir_), "pytorch_model.bin is not supported");
}

TEST(ImportErrors, ShardedIndexProblems) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  FixtureConfig f;
  f.shards = 2;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, f).ok());
  const std::string index = dir + "/model.safetensors.index.json";
  const std::string good = [&] {
    std::ifstream in(index);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }();
  ASSERT_EQ(load_error(dir), "<loaded>");

  // lm_head is in shard 2; claim it lives in shard 1.
  std::string moved = good;
  const size_t at = moved.find("\"lm_head.weight\": \"model-00002-of-00002.safetensors\"");
  ASSERT_NE(at, std::string::npos) << good;
  moved.replace(moved.find("00002-of", at), 5, "00001");
  write_text(index, moved);
  EXPECT_CONTAINS(load_error(dir),
                  "model.safetensors.index.json maps tensor 'lm_head.weight' to "
                  "'model-00001-of-00002.safetensors', which does not contain it");

  std::string escape = good;
  escape.replace(escape.find("model-00002-of-00002.safetensors"), 32, "../model-00002-of-00002.safe");
  write_text(index, escape);
  EXPECT_CONTAINS(load_error(dir), "is not a plain file name");

  write_text(index, "{\"metadata\": {}}");
  EXPECT_CONTAINS(load_error(dir), "model.safetensors.index.json: missing object 'weight_map'");

  write_text(index, good);
  fs::remove(dir + "/model-00002-of-00002.safetensors");
  ErrorCode code;
  EXPECT_CONTAINS(load_error(dir, {}, &code), "model-00002-of-00002.safetensors");
  EXPECT_EQ(code, ErrorCode::kNotFound);
}

TEST(ImportErrors, MissingPath) {
  ErrorCode code;
  EXPECT_CONTAINS(load_error("/nonexistent/kestrel/model", {}, &code), "'/nonexistent/kestrel/model' does not exist");
  EXPECT_EQ(code, ErrorCode::kNotFound);
}


FixtureConfig tiny_config() {
  FixtureConfig f;
  f.vocab_size = 16;
  f.hidden_size = 8;
  f.intermediate_size = 8;
  f.num_layers = 1;
  f.num_heads = 2;
  f.num_kv_heads = 1;
  f.max_position_embeddings = 4;
  f.bos_id = 1;
  f.eos_id = 2;
  return f;
}

TEST(ImportRobustness, EverySafetensorsTruncationIsAnError) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, tiny_config()).ok());
  const std::string path = dir + "/model.safetensors";
  std::ifstream in(path, std::ios::binary);
  const std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(load_error(dir), "<loaded>");
  for (size_t size = 0; size < full.size(); size += size < 16 || size + 16 > full.size() ? 1 : 29) {
    write_text(path, full.substr(0, size));
    ErrorCode code = ErrorCode::kInternal;
    const std::string msg = load_error(dir, {}, &code);
    ASSERT_NE(msg, "<loaded>") << "truncated to " << size;
    EXPECT_EQ(code, ErrorCode::kCorrupt) << msg;
    EXPECT_CONTAINS(msg, "model.safetensors: ");
  }
}

TEST(ImportRobustness, CorruptedHeaderBytesNeverCrash) {
  ScratchDir scratch;
  const std::string dir = scratch / "model";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, tiny_config()).ok());
  const std::string path = dir + "/model.safetensors";
  std::ifstream in(path, std::ios::binary);
  const std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t header_len = 0;
  std::memcpy(&header_len, full.data(), 8);
  fixtures::SplitMix64 rng(99);
  const char digits[] = "0123456789,[]{}\":-9";
  int failures = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string bytes = full;
    const int edits = 1 + static_cast<int>(rng.next() % 3);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng.next() % (8 + header_len);
      bytes[at] = (rng.next() & 1) ? digits[rng.next() % (sizeof(digits) - 1)]
                                   : static_cast<char>(rng.next() & 0xff);
    }
    write_text(path, bytes);
    auto result = load_checkpoint(dir);
    if (!result.ok()) {
      ++failures;
      EXPECT_FALSE(result.error().message().empty());
      continue;
    }
    // Whatever loads must still be in bounds and of the right sizes.
    for (const auto& name : result->tensor_names()) {
      auto tensor = result->tensor(name);
      if (!tensor.ok()) continue;
      uint64_t numel = 1;
      for (int64_t d : tensor->shape) numel *= static_cast<uint64_t>(d);
      EXPECT_EQ(tensor->bytes.size(), numel * dtype_element_size(tensor->dtype)) << name;
    }
  }
  EXPECT_GT(failures, 0);
}

TEST(ImportRobustness, EveryLlama2cTruncationIsAnError) {
  ScratchDir scratch;
  const FixtureConfig f = tiny_config();
  const std::string bin = scratch / "model.bin";
  ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin, f).ok());
  std::vector<uint8_t> tok(4);
  const int32_t max_len = 4;
  std::memcpy(tok.data(), &max_len, 4);
  for (int64_t i = 0; i < f.vocab_size; ++i) {
    const float score = 0;
    const int32_t len = 1;
    tok.insert(tok.end(), reinterpret_cast<const uint8_t*>(&score), reinterpret_cast<const uint8_t*>(&score) + 4);
    tok.insert(tok.end(), reinterpret_cast<const uint8_t*>(&len), reinterpret_cast<const uint8_t*>(&len) + 4);
    tok.push_back(static_cast<uint8_t>('a' + i));
  }
  write_text(scratch / "tokenizer.bin", std::string(tok.begin(), tok.end()));
  CheckpointOptions options;
  options.tokenizer_path = scratch / "tokenizer.bin";
  ASSERT_EQ(load_error(bin, options), "<loaded>");
  std::ifstream in(bin, std::ios::binary);
  const std::string full((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (size_t size = 0; size < full.size(); size += size < 32 || size + 8 > full.size() ? 1 : 31) {
    write_text(bin, full.substr(0, size));
    const std::string msg = load_error(bin, options);
    ASSERT_NE(msg, "<loaded>") << "truncated to " << size;
    EXPECT_CONTAINS(msg, "model.bin: ");
  }
}

// ---- llama2.c ----

std::vector<uint8_t> tokenizer_bin(int64_t vocab, int32_t max_len = 8) {
  std::vector<uint8_t> out(4);
  std::memcpy(out.data(), &max_len, 4);
  for (int64_t i = 0; i < vocab; ++i) {
    std::string text = "t";
    text += std::to_string(i);
    const float score = 0.5f;
    const int32_t len = static_cast<int32_t>(text.size());
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&score), reinterpret_cast<const uint8_t*>(&score) + 4);
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&len), reinterpret_cast<const uint8_t*>(&len) + 4);
    out.insert(out.end(), text.begin(), text.end());
  }
  return out;
}

class ImportLlama2cErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = scratch_ / "model.bin";
    tok_ = scratch_ / "tokenizer.bin";
    ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin_, config_).ok());
    write_tokenizer(tokenizer_bin(config_.vocab_size));
    options_.tokenizer_path = tok_;
    ASSERT_EQ(load_error(bin_, options_), "<loaded>");
  }
  void write_tokenizer(const std::vector<uint8_t>& bytes) {
    write_text(tok_, std::string(bytes.begin(), bytes.end()));
  }

  ScratchDir scratch_;
  FixtureConfig config_;
  std::string bin_, tok_;
  CheckpointOptions options_;
};

TEST_F(ImportLlama2cErrors, TruncatedFileNamesTheTensor) {
  truncate_by(bin_, 4);  // the classifier (untied) loses its last float
  const std::string msg = load_error(bin_, options_);
  EXPECT_CONTAINS(msg, "model.bin: truncated: tensor 'lm_head.weight' (wcls) needs bytes [");
  // Deep inside the layers.
  const uintmax_t header = 28, embed = 4ull * 288 * 64, norms = 4ull * 2 * 64;
  fs::resize_file(bin_, header + embed + norms + 4ull * 64 * 64 + 100);
  EXPECT_CONTAINS(load_error(bin_, options_),
                  "tensor 'model.layers.1.self_attn.q_proj.weight' (wq, layer 1) needs bytes");
  fs::resize_file(bin_, 10);
  EXPECT_CONTAINS(load_error(bin_, options_), "model.bin: file is 10 bytes, too short for the 28-byte llama2.c header");
}

TEST_F(ImportLlama2cErrors, BadHeader) {
  std::fstream f(bin_, std::ios::in | std::ios::out | std::ios::binary);
  const int32_t zero = 0;
  f.seekp(8);
  f.write(reinterpret_cast<const char*>(&zero), 4);
  f.close();
  EXPECT_CONTAINS(load_error(bin_, options_), "model.bin: header field n_layers = 0 must be positive");
  write_text(bin_, std::string("24ka") + std::string(40, '\0'));
  ErrorCode code;
  EXPECT_CONTAINS(load_error(bin_, options_, &code), "versioned llama2.c export");
  EXPECT_EQ(code, ErrorCode::kUnsupported);
}

TEST_F(ImportLlama2cErrors, TokenizerProblems) {
  ErrorCode code;
  EXPECT_CONTAINS(load_error(bin_, {}, &code), "needs its tokenizer.bin: pass it with --tokenizer FILE");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);

  CheckpointOptions missing;
  missing.tokenizer_path = scratch_ / "absent.bin";
  const std::string msg = load_error(bin_, missing, &code);
  EXPECT_EQ(code, ErrorCode::kNotFound);
  EXPECT_CONTAINS(msg, "absent.bin");

  write_tokenizer(tokenizer_bin(config_.vocab_size - 1));
  EXPECT_CONTAINS(load_error(bin_, options_), "holds 287 tokens, but the model's vocab_size is 288");

  auto cut = tokenizer_bin(config_.vocab_size);
  cut.erase(cut.end() - 2, cut.end());
  write_tokenizer(cut);
  EXPECT_CONTAINS(load_error(bin_, options_), "tokenizer.bin: truncated: token 287 needs");

  write_tokenizer(tokenizer_bin(config_.vocab_size, 2));  // "t100" is longer than 2
  EXPECT_CONTAINS(load_error(bin_, options_), "token 10 has length 3, outside [0, max_token_length 2]");
}

}  // namespace
}  // namespace kestrel::exporter
