#include "chat/chat_fixture.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kestrel/export/checkpoint.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "llm/test_programs.h"

namespace kestrel::testing {

namespace {

int64_t special_id(const nlohmann::json& tokenizer, const std::string& content) {
  for (const auto& token : tokenizer["added_tokens"])
    if (token["content"] == content) return token["id"].get<int64_t>();
  ADD_FAILURE() << "no special token " << content;
  return -1;
}

}  // namespace

ChatCheckpoint write_chat_checkpoint(const std::string& dir, nlohmann::ordered_json tokenizer_config) {
  constexpr int64_t kVocab = 320;
  const std::string tokenizer_json = fixtures::build_byte_level_bpe_tokenizer_json(
      fixtures::default_corpus(), kVocab, {"<|begin_of_text|>", "<|end_of_text|>", "<|im_start|>", "<|im_end|>"});
  const auto tokenizer = nlohmann::json::parse(tokenizer_json);
  ChatCheckpoint checkpoint;
  checkpoint.dir = dir;
  checkpoint.vocab_size = kVocab;
  checkpoint.bos = special_id(tokenizer, "<|begin_of_text|>");
  checkpoint.eos = special_id(tokenizer, "<|end_of_text|>");
  checkpoint.im_start = special_id(tokenizer, "<|im_start|>");
  checkpoint.im_end = special_id(tokenizer, "<|im_end|>");
  fixtures::FixtureConfig config = small_fixture();
  config.vocab_size = kVocab;
  config.max_position_embeddings = 256;
  config.bos_id = checkpoint.bos;
  config.eos_id = checkpoint.eos;
  const auto status = fixtures::write_hf_checkpoint(dir, config, tokenizer_json);
  EXPECT_TRUE(status.ok()) << status.error().to_string();
  if (!tokenizer_config.contains("bos_token")) tokenizer_config["bos_token"] = "<|begin_of_text|>";
  if (!tokenizer_config.contains("eos_token")) tokenizer_config["eos_token"] = "<|im_end|>";
  std::ofstream(dir + "/tokenizer_config.json") << tokenizer_config.dump(2);
  return checkpoint;
}

program::ProgramSpec export_chat_program(const std::string& dir) {
  auto checkpoint = exporter::load_checkpoint(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  if (!checkpoint.ok()) return {};
  auto spec = exporter::export_program(*checkpoint, small_export(4, 192));
  EXPECT_TRUE(spec.ok()) << spec.error().to_string();
  if (!spec.ok()) return {};
  return std::move(spec).value();
}

}  // namespace kestrel::testing
