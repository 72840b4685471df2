// Export reads a checkpoint's chat template and chat tokens and stores them in the program.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "chat/chat_fixture.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/program/io_contract.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

namespace keys = contract::hf_static;
using json = nlohmann::ordered_json;

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

exporter::ChatConfig chat_of(const std::string& dir) {
  auto checkpoint = exporter::load_checkpoint(dir);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  return checkpoint.ok() ? checkpoint->chat() : exporter::ChatConfig{};
}

TEST(ChatConfig, ReadsTheTemplateAndTokensFromTokenizerConfig) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("m"), {{"chat_template", kChatmlTemplate}, {"add_bos_token", true}});
  const auto chat = chat_of(model.dir);
  EXPECT_EQ(chat.chat_template, kChatmlTemplate);
  EXPECT_EQ(chat.template_file, "tokenizer_config.json");
  EXPECT_EQ(chat.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(chat.eos_token, "<|im_end|>");
  ASSERT_TRUE(chat.add_bos_token.has_value());
  EXPECT_TRUE(*chat.add_bos_token);
  // The model's eos (generation_config.json) and the eos_token's id.
  EXPECT_EQ(chat.end_of_turn_ids, (std::vector<int64_t>{model.eos, model.im_end}));
}

TEST(ChatConfig, TokensMayBeAddedTokenObjectsAndEosIdsAList) {
  TempDir dir;
  const auto model = write_chat_checkpoint(
      dir.file("m"), {{"chat_template", kChatmlTemplate},
                      {"bos_token", {{"__type", "AddedToken"}, {"content", "<|begin_of_text|>"}, {"special", true}}},
                      {"eos_token", {{"content", "<|im_end|>"}}}});
  write(model.dir + "/generation_config.json",
        json{{"bos_token_id", model.bos}, {"eos_token_id", json::array({model.im_end, model.eos})}}.dump());
  const auto chat = chat_of(model.dir);
  EXPECT_EQ(chat.bos_token, "<|begin_of_text|>");
  EXPECT_EQ(chat.eos_token, "<|im_end|>");
  EXPECT_FALSE(chat.add_bos_token.has_value());
  EXPECT_EQ(chat.end_of_turn_ids, (std::vector<int64_t>{model.im_end, model.eos}));
}

TEST(ChatConfig, NamedTemplatesPickDefaultAndKeepTheOthers) {
  TempDir dir;
  const json templates = json::array({{{"name", "tool_use"}, {"template", "TOOLS {{ tools | length }}"}},
                                      {{"name", "default"}, {"template", "DEFAULT"}}});
  const auto model = write_chat_checkpoint(dir.file("m"), {{"chat_template", templates}});
  const auto chat = chat_of(model.dir);
  EXPECT_EQ(chat.chat_template, "DEFAULT");
  ASSERT_EQ(chat.named_templates.count("tool_use"), 1u);
  EXPECT_EQ(chat.named_templates.at("tool_use"), "TOOLS {{ tools | length }}");
}

TEST(ChatConfig, SeparateTemplateFilesTakePrecedence) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("m"), {{"chat_template", "INLINE"}});
  write(model.dir + "/chat_template.json", json{{"chat_template", "FROM JSON"}}.dump());
  EXPECT_EQ(chat_of(model.dir).chat_template, "FROM JSON");
  write(model.dir + "/chat_template.jinja", "FROM JINJA {{ messages | length }}\n");
  EXPECT_EQ(chat_of(model.dir).chat_template, "FROM JINJA {{ messages | length }}\n");
  EXPECT_EQ(chat_of(model.dir).template_file, "chat_template.jinja");
  std::filesystem::create_directories(model.dir + "/additional_chat_templates");
  write(model.dir + "/additional_chat_templates/rag.jinja", "RAG");
  EXPECT_EQ(chat_of(model.dir).named_templates.at("rag"), "RAG");
}

TEST(ChatConfig, ACheckpointWithoutTemplateHasNone) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("m"), json::object());
  EXPECT_FALSE(chat_of(model.dir).has_template());
  const auto spec = export_chat_program(model.dir);
  EXPECT_EQ(spec.metadata.count(keys::kChatTemplate), 0u);
  EXPECT_EQ(spec.metadata.count(keys::kEndOfTurnIds), 0u);
}

TEST(ChatConfig, ATemplateThatDoesNotParseIsAnExportErrorWithPosition) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("m"), json::object());
  write(model.dir + "/chat_template.jinja", "{% for m in messages %}\n{{ m.content | nosuchfilter }}\n{% endfor %}");
  auto checkpoint = exporter::load_checkpoint(model.dir);
  ASSERT_FALSE(checkpoint.ok());
  const std::string message = checkpoint.error().message();
  EXPECT_NE(message.find("chat_template.jinja"), std::string::npos) << message;
  EXPECT_NE(message.find("line 2, column 16"), std::string::npos) << message;
  EXPECT_NE(message.find("no filter named 'nosuchfilter'"), std::string::npos) << message;
}

TEST(ChatConfig, BadChatMetadataIsAnError) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("m"), {{"chat_template", kChatmlTemplate}, {"eos_token", "<|nope|>"}});
  auto checkpoint = exporter::load_checkpoint(model.dir);
  ASSERT_FALSE(checkpoint.ok());
  EXPECT_NE(checkpoint.error().message().find("eos_token '<|nope|>' is not a token"), std::string::npos)
      << checkpoint.error().message();

  write(model.dir + "/tokenizer_config.json", json{{"chat_template", 42}}.dump());
  EXPECT_FALSE(exporter::load_checkpoint(model.dir).ok());
  write(model.dir + "/tokenizer_config.json", json{{"chat_template", kChatmlTemplate}, {"add_bos_token", "yes"}}.dump());
  EXPECT_FALSE(exporter::load_checkpoint(model.dir).ok());
  write(model.dir + "/tokenizer_config.json", "{ not json");
  EXPECT_FALSE(exporter::load_checkpoint(model.dir).ok());
}

TEST(ChatConfig, ExportStoresTheChatMetadata) {
  TempDir dir;
  const json templates = json::array({{{"name", "default"}, {"template", kChatmlTemplate}},
                                      {{"name", "tool_use"}, {"template", "T"}}});
  const auto model =
      write_chat_checkpoint(dir.file("m"), {{"chat_template", templates}, {"add_bos_token", false}});
  const auto spec = export_chat_program(model.dir);
  const auto& meta = spec.metadata;
  ASSERT_EQ(meta.count(keys::kChatTemplate), 1u);
  EXPECT_EQ(std::get<std::string>(meta.at(keys::kChatTemplate)), kChatmlTemplate);
  EXPECT_EQ(std::get<std::string>(meta.at(std::string(keys::kChatTemplatePrefix) + "tool_use")), "T");
  EXPECT_EQ(std::get<std::vector<int64_t>>(meta.at(keys::kEndOfTurnIds)), (std::vector<int64_t>{model.eos, model.im_end}));
  EXPECT_EQ(std::get<std::string>(meta.at(keys::kBosToken)), "<|begin_of_text|>");
  EXPECT_EQ(std::get<std::string>(meta.at(keys::kEosToken)), "<|im_end|>");
  EXPECT_FALSE(std::get<bool>(meta.at(keys::kAddBosToken)));
  // It survives serialization and loading.
  const auto program = load_spec(spec);
  ASSERT_NE(program, nullptr);
  EXPECT_EQ(std::get<std::string>(program->metadata().at(keys::kChatTemplate)), kChatmlTemplate);
}

}  // namespace
}  // namespace kestrel::testing
