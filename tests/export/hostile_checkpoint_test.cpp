// Checkpoints crafted to be silently misread: repeated JSON keys (nlohmann would keep the last
// one), and tokenizers that only a runner would have noticed were broken. Each is an export
// error naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "export/scratch_dir.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "support/expect_contains.h"

namespace kestrel::exporter {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using fixtures::FixtureConfig;
using testing::ScratchDir;
using testing::write_text;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class HostileCheckpoint : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = scratch_ / "model";
    tokenizer_ = json::parse(fixtures::build_byte_level_bpe_tokenizer_json(fixtures::default_corpus(),
                                                                            config_.vocab_size, {"<s>", "</s>"}));
    ASSERT_TRUE(fixtures::write_hf_checkpoint(dir_, config_, tokenizer_.dump()).ok());
    ASSERT_TRUE(load_checkpoint(dir_).ok());
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }
  std::string load_error(ErrorCode* code = nullptr, const CheckpointOptions& options = {}) const {
    auto result = load_checkpoint(dir_, options);
    if (result.ok()) return "<loaded>";
    if (code != nullptr) *code = result.error().code();
    return result.error().message();
  }

  ScratchDir scratch_;
  FixtureConfig config_;
  json tokenizer_;
  std::string dir_;
};

// Rewrites model.safetensors with `extra` (",\"name\": {...}") appended inside its header.
void append_to_safetensors_header(const std::string& path, const std::string& extra) {
  const std::string bytes = read_text(path);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i) length = length << 8 | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  std::string header = bytes.substr(8, length);
  header.insert(header.rfind('}'), extra);
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  write_text(path, out + header + bytes.substr(8 + length));
}

TEST_F(HostileCheckpoint, ATensorNamedTwiceInTheSafetensorsHeader) {
  // The second entry points at other bytes of the same shape: keeping either would be a guess.
  append_to_safetensors_header(file("model.safetensors"),
                               R"(,"model.norm.weight": {"dtype": "F32", "shape": [64], "data_offsets": [0, 256]})");
  ErrorCode code;
  const std::string message = load_error(&code);
  EXPECT_EQ(code, ErrorCode::kCorrupt);
  EXPECT_CONTAINS(message, "model.safetensors header: key 'model.norm.weight' appears twice");
}

TEST_F(HostileCheckpoint, AFieldNamedTwiceInsideATensorEntry) {
  append_to_safetensors_header(
      file("model.safetensors"),
      R"(,"extra.weight": {"dtype": "F32", "dtype": "F16", "shape": [1], "data_offsets": [0, 4]})");
  EXPECT_CONTAINS(load_error(), "key 'extra.weight.dtype' appears twice");
}

TEST_F(HostileCheckpoint, ConfigAndIndexKeysNamedTwice) {
  std::string config = read_text(file("config.json"));
  config.insert(config.rfind('}'), R"(, "num_hidden_layers": 1)");
  write_text(file("config.json"), config);
  EXPECT_CONTAINS(load_error(), "config.json: key 'num_hidden_layers' appears twice");

  ScratchDir scratch;
  const std::string sharded = scratch / "sharded";
  FixtureConfig f = config_;
  f.shards = 2;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(sharded, f).ok());
  const std::string index_path = sharded + "/model.safetensors.index.json";
  std::string index = read_text(index_path);
  index.insert(index.rfind("}", index.rfind('}') - 1),
               R"(, "lm_head.weight": "model-00001-of-00002.safetensors")");
  write_text(index_path, index);
  auto loaded = load_checkpoint(sharded);
  ASSERT_FALSE(loaded.ok());
  EXPECT_CONTAINS(loaded.error().message(), "key 'weight_map.lm_head.weight' appears twice");
}

// Damaged tokenizer.json files: each must fail at export, naming tokenizer.json, instead of
// producing a program whose tokenizer fails only when run.
TEST_F(HostileCheckpoint, DamagedTokenizerJsonFailsAtExport) {
  struct Variant {
    const char* name;
    std::function<std::string(json)> make;  // the file text from a good tokenizer.json
    const char* message;
  };
  const auto edit = [](std::function<void(json&)> change) {
    return [change](json j) {
      change(j);
      return j.dump();
    };
  };
  const std::vector<Variant> variants = {
      {"truncated", [](json j) { return j.dump().substr(0, 200); }, "malformed JSON"},
      {"empty", [](json) { return std::string(); }, "malformed JSON"},
      {"not an object", [](json) { return std::string("[1, 2, 3]"); }, "must be an object"},
      {"binary garbage", [](json) { return std::string("\x7f\x00\xff{", 4); }, "malformed JSON"},
      {"no model", edit([](json& j) { j.erase("model"); }), "model is missing"},
      {"model not an object", edit([](json& j) { j["model"] = 3; }), "model must be an object"},
      {"unknown model type", edit([](json& j) { j["model"]["type"] = "WordPiece"; }), "model.type 'WordPiece'"},
      {"no vocab", edit([](json& j) { j["model"].erase("vocab"); }), "model.vocab is missing"},
      {"vocab a list", edit([](json& j) { j["model"]["vocab"] = json::array({1, 2}); }), "model.vocab must be"},
      {"vocab empty", edit([](json& j) { j["model"]["vocab"] = json::object(); j["model"]["merges"] = json::array(); }),
       "model.vocab is empty"},
      {"negative id", edit([](json& j) { j["model"]["vocab"]["a"] = -4; }), "id -4 is outside"},
      {"huge id", edit([](json& j) { j["model"]["vocab"]["a"] = 1LL << 40; }), "is outside"},
      {"id a string", edit([](json& j) { j["model"]["vocab"]["a"] = "12"; }), "must be an integer id"},
      {"merges not a list", edit([](json& j) { j["model"]["merges"] = "a b"; }), "model.merges must be an array"},
      {"merge of unknown tokens", edit([](json& j) { j["model"]["merges"].push_back("zzqq yyxx"); }),
       "is not in model.vocab"},
      {"merge without space", edit([](json& j) { j["model"]["merges"].push_back("ab"); }),
       "is not two tokens separated by one space"},
      {"unk token missing", edit([](json& j) { j["model"]["unk_token"] = "<nope>"; }), "model.unk_token"},
      {"added tokens not a list", edit([](json& j) { j["added_tokens"] = 1; }), "added_tokens must be an array"},
      {"added token without id", edit([](json& j) { j["added_tokens"][0].erase("id"); }), "added_tokens[0].id"},
      {"added token empty", edit([](json& j) { j["added_tokens"][0]["content"] = ""; }), "must not be empty"},
      {"unknown normalizer", edit([](json& j) { j["normalizer"] = {{"type", "BertNormalizer"}}; }),
       "normalizer.type 'BertNormalizer' is not supported"},
      {"unknown pre-tokenizer", edit([](json& j) { j["pre_tokenizer"] = {{"type", "CharDelimiterSplit"}}; }),
       "pre_tokenizer.type 'CharDelimiterSplit'"},
      {"bad split regex",
       edit([](json& j) { j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}}; }),
       "pre_tokenizer.pattern.Regex"},
      {"unknown decoder", edit([](json& j) { j["decoder"] = {{"type", "WordPiece"}}; }),
       "decoder.type 'WordPiece' is not supported"},
      {"unknown post-processor", edit([](json& j) { j["post_processor"] = {{"type", "RobertaProcessing"}}; }),
       "post_processor.type 'RobertaProcessing' is not supported"},
      {"template bos without id",
       edit([](json& j) {
         j["post_processor"] = {{"type", "TemplateProcessing"},
                                {"single", json::array({{{"SpecialToken", {{"id", "<nope>"}}}},
                                                        {{"Sequence", {{"id", "A"}}}}})}};
       }),
       "special token '<nope>' has no id"},
      {"more tokens than the model", edit([](json& j) { j["model"]["vocab"]["extra"] = 4000; }),
       "the model's vocabulary is 288"},
  };
  for (const Variant& v : variants) {
    SCOPED_TRACE(v.name);
    write_text(file("tokenizer.json"), v.make(tokenizer_));
    const std::string message = load_error();
    EXPECT_CONTAINS(message, "tokenizer.json");
    EXPECT_CONTAINS(message, v.message);
  }
}

TEST_F(HostileCheckpoint, ATokenizerThatIsADirectoryIsAnError) {
  fs::remove(file("tokenizer.json"));
  fs::create_directory(file("tokenizer.json"));
  ErrorCode code;
  EXPECT_CONTAINS(load_error(&code), "tokenizer.json' is a directory");
  EXPECT_EQ(code, ErrorCode::kInvalidArgument);

  CheckpointOptions explicit_dir;
  explicit_dir.tokenizer_path = scratch_.path();
  EXPECT_CONTAINS(load_error(&code, explicit_dir), "is a directory");

  const std::string bin = scratch_ / "model.bin";
  ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin, config_).ok());
  auto llama2c = load_checkpoint(bin, explicit_dir);
  ASSERT_FALSE(llama2c.ok());
  EXPECT_CONTAINS(llama2c.error().message(), "is a directory");
}

TEST_F(HostileCheckpoint, AMissingTokenizerIsReportedByTheExport) {
  fs::remove(file("tokenizer.json"));
  auto checkpoint = load_checkpoint(dir_);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  EXPECT_EQ(checkpoint->tokenizer_format(), TokenizerFormat::kNone);
  ExportOptions options;
  options.max_context = 32;
  options.prefill_step = 4;
  ExportReport report;
  ASSERT_TRUE(export_program(*checkpoint, options, &report).ok());
  EXPECT_EQ(report.tokenizer_format, "none");

  options.max_context = -1;
  auto negative = export_program(*checkpoint, options, &report);
  ASSERT_FALSE(negative.ok());
  EXPECT_CONTAINS(negative.error().message(), "max context must be >= 1");
}

}  // namespace
}  // namespace kestrel::exporter
