// ChatTemplate: the variables templates see, template selection, and how a rendered prompt
// becomes token ids (special tokens as single ids, bos at most once).
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat_fixture.h"
#include "kestrel/llm/chat_template.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

using json = nlohmann::ordered_json;
namespace keys = contract::hf_static;

class ChatTemplateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = write_chat_checkpoint(dir_.file("m"), {{"chat_template", kChatmlTemplate}});
    auto runner = llm::Runner::from_program(load_spec(export_chat_program(model_.dir)));
    ASSERT_TRUE(runner.ok()) << runner.error().to_string();
    runner_ = std::move(runner).value();
  }
  const llm::Tokenizer& tokenizer() const { return *runner_->tokenizer(); }

  TempDir dir_;
  ChatCheckpoint model_;
  std::unique_ptr<llm::Runner> runner_;
};

int64_t count(const std::vector<int64_t>& ids, int64_t id) { return std::count(ids.begin(), ids.end(), id); }

TEST_F(ChatTemplateTest, TheProgramsTemplateRendersTheConversation) {
  auto chat = llm::ChatTemplate::from_metadata(runner_->program_metadata());
  ASSERT_TRUE(chat.ok()) << chat.error().to_string();
  ASSERT_TRUE(chat->has_value());
  const json messages = json::parse(R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}])");
  auto prompt = (*chat)->render(messages);
  ASSERT_TRUE(prompt.ok()) << prompt.error().to_string();
  EXPECT_EQ(*prompt, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
  llm::ChatRenderOptions no_prompt;
  no_prompt.add_generation_prompt = false;
  EXPECT_EQ(*(*chat)->render(messages, no_prompt),
            "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n");
  EXPECT_EQ((*chat)->tokens().end_of_turn_ids, (std::vector<int64_t>{model_.eos, model_.im_end}));
}

TEST_F(ChatTemplateTest, SpecialTokensTheTemplateWritesBecomeSingleIds) {
  auto chat = *llm::ChatTemplate::from_metadata(runner_->program_metadata());
  const json messages = json::parse(
      R"([{"role": "user", "content": "Hi <there>"}, {"role": "assistant", "content": "Hello | you"},
          {"role": "user", "content": "Bye"}])");
  const std::string prompt = *chat->render(messages);
  auto ids = chat->encode(tokenizer(), prompt);
  ASSERT_TRUE(ids.ok()) << ids.error().to_string();
  EXPECT_EQ(count(*ids, model_.im_start), 4);  // three turns and the generation prompt
  EXPECT_EQ(count(*ids, model_.im_end), 3);
  EXPECT_EQ(ids->front(), model_.im_start);
  EXPECT_EQ(*tokenizer().decode(*ids), prompt);
  // Spelled out as plain text, the marker would take several byte-level tokens.
  auto plain = tokenizer().encode("<|im_start", false);
  ASSERT_TRUE(plain.ok());
  EXPECT_GT(plain->size(), 1u);
}

TEST_F(ChatTemplateTest, BosIsPrependedOnlyWhenTheTokenizerAddsItAndTheTemplateDidNot) {
  const std::string with_bos = std::string("{{ bos_token }}") + kChatmlTemplate;
  const json messages = json::parse(R"([{"role": "user", "content": "Hi"}])");
  auto encode = [&](const std::string& source, bool add_bos) {
    llm::ChatTokens tokens;
    tokens.bos_token = "<|begin_of_text|>";
    tokens.add_bos = add_bos;
    auto chat = llm::ChatTemplate::create(source, tokens);
    EXPECT_TRUE(chat.ok());
    return *chat->encode(tokenizer(), *chat->render(messages));
  };
  const int64_t bos = tokenizer().bos_id();
  ASSERT_EQ(bos, model_.bos);
  auto ids = encode(with_bos, true);  // written by the template: not added again
  EXPECT_EQ(ids[0], bos);
  EXPECT_EQ(count(ids, bos), 1);
  ids = encode(kChatmlTemplate, true);  // added by the tokenizer
  EXPECT_EQ(ids[0], bos);
  EXPECT_EQ(ids[1], model_.im_start);
  ids = encode(kChatmlTemplate, false);  // neither
  EXPECT_EQ(count(ids, bos), 0);
  ids = encode(with_bos, false);
  EXPECT_EQ(count(ids, bos), 1);
}

TEST(ChatTemplate, TemplatesSeeTheVariablesTransformersPasses) {
  llm::ChatTokens tokens;
  tokens.bos_token = "<s>";
  tokens.eos_token = "</s>";
  auto chat = llm::ChatTemplate::create(
      "{{ bos_token }}|{{ eos_token }}|{{ tools is none }}|{{ documents is none }}|{{ add_generation_prompt }}|"
      "{{ enable_thinking | default('unset') }}|{{ messages | length }}",
      tokens);
  ASSERT_TRUE(chat.ok()) << chat.error().to_string();
  const json messages = json::array({json{{"role", "user"}, {"content", "x"}}});
  EXPECT_EQ(*chat->render(messages), "<s>|</s>|True|True|True|unset|1");
  llm::ChatRenderOptions options;
  options.add_generation_prompt = false;
  options.extra = {{"enable_thinking", false}, {"tools", json::array()}};
  EXPECT_EQ(*chat->render(messages, options), "<s>|</s>|False|True|False|False|1");
}

TEST(ChatTemplate, ToolsSelectTheToolUseTemplate) {
  auto chat = llm::ChatTemplate::create("DEFAULT", {}, {{"tool_use", "TOOLS {{ tools | length }}"}});
  ASSERT_TRUE(chat.ok());
  const json messages = json::array();
  EXPECT_EQ(*chat->render(messages), "DEFAULT");
  llm::ChatRenderOptions options;
  options.extra = {{"tools", json::array({json{{"name", "f"}}})}};
  EXPECT_EQ(*chat->render(messages, options), "TOOLS 1");
}

TEST(ChatTemplate, BadInputIsAnError) {
  auto chat = llm::ChatTemplate::create("{{ messages[0].content.upper() }}", {});
  ASSERT_TRUE(chat.ok());
  EXPECT_FALSE(chat->render(json::object()).ok());             // not a list
  EXPECT_FALSE(chat->render(json::array({"text"})).ok());      // not objects
  const auto missing = chat->render(json::array({json::object()}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("rendering the chat template"), std::string::npos);
  EXPECT_FALSE(llm::ChatTemplate::create("{% if %}", {}).ok());

  program::Metadata metadata;
  EXPECT_FALSE(llm::ChatTemplate::from_metadata(metadata)->has_value());
  metadata[keys::kChatTemplate] = int64_t{3};
  EXPECT_FALSE(llm::ChatTemplate::from_metadata(metadata).ok());
  metadata[keys::kChatTemplate] = std::string("x");
  metadata[keys::kEndOfTurnIds] = std::string("not a list");
  EXPECT_FALSE(llm::ChatTemplate::from_metadata(metadata).ok());
}

}  // namespace
}  // namespace kestrel::testing
