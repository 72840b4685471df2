// ChatSession: multi-turn chat through the template, with the cache of earlier turns reused
// (checked against fresh runs of the whole prompt), end-of-turn stops, and failed turns that
// leave the conversation as it was.
#include <gtest/gtest.h>

#include <algorithm>

#include "chat/chat_fixture.h"
#include "kestrel/llm/chat_session.h"
#include "kestrel/program/io_contract.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

using json = nlohmann::ordered_json;
namespace keys = contract::hf_static;

llm::GenerationConfig greedy(int64_t n) {
  llm::GenerationConfig config;
  config.max_new_tokens = n;
  config.sampler.temperature = 0;
  return config;
}

class ChatSessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = write_chat_checkpoint(dir_.file("m"), {{"chat_template", kChatmlTemplate}});
    spec_ = export_chat_program(model_.dir);
  }

  std::unique_ptr<llm::Runner> make_runner(const program::ProgramSpec& spec) {
    auto runner = llm::Runner::from_program(load_spec(spec));
    EXPECT_TRUE(runner.ok()) << runner.error().to_string();
    return runner.ok() ? std::move(runner).value() : nullptr;
  }

  // The reference: a fresh runner generating from the whole prompt.
  std::vector<int64_t> fresh_tokens(const std::string& prompt, const llm::GenerationConfig& config) {
    auto runner = make_runner(spec_);
    auto chat = *llm::ChatTemplate::from_metadata(runner->program_metadata());
    auto ids = chat->encode(*runner->tokenizer(), prompt);
    EXPECT_TRUE(ids.ok());
    llm::GenerationConfig turn = config;
    turn.stop_token_ids = chat->tokens().end_of_turn_ids;
    auto result = runner->generate_ids(*ids, turn);
    EXPECT_TRUE(result.ok()) << result.error().to_string();
    return result.ok() ? result->token_ids : std::vector<int64_t>{};
  }

  TempDir dir_;
  ChatCheckpoint model_;
  program::ProgramSpec spec_;
};

TEST_F(ChatSessionTest, LaterTurnsReuseTheCacheAndMatchAFreshRun) {
  auto runner = make_runner(spec_);
  llm::ChatOptions options;
  options.system_prompt = "You are terse.";
  auto session = llm::ChatSession::create(*runner, options);
  ASSERT_TRUE(session.ok()) << session.error().to_string();

  auto first = session->send("Tell me about birds.", greedy(6));
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(first->reused_tokens, 0);
  EXPECT_EQ(first->generation.token_ids, fresh_tokens(first->prompt, greedy(6)));

  auto second = session->send("And the rain?", greedy(6));
  ASSERT_TRUE(second.ok()) << second.error().to_string();
  // The whole first prompt is a prefix of the second rendering: its cache is kept.
  EXPECT_GE(second->reused_tokens, first->prompt_tokens);
  EXPECT_LT(second->reused_tokens, second->prompt_tokens);
  EXPECT_LE(second->reused_tokens + static_cast<int64_t>(second->generation.prompt_token_ids.size()),
            second->prompt_tokens);
  EXPECT_EQ(second->generation.token_ids, fresh_tokens(second->prompt, greedy(6)));

  // The conversation holds the replies as generated.
  const json& messages = session->messages();
  ASSERT_EQ(messages.size(), 5u);
  EXPECT_EQ(messages[0]["role"], "system");
  EXPECT_EQ(messages[2]["role"], "assistant");
  EXPECT_EQ(messages[2]["content"], first->text);
  EXPECT_EQ(messages[4]["content"], second->text);
  EXPECT_EQ(second->prompt.rfind("<|im_start|>system\nYou are terse.<|im_end|>\n", 0), 0u);
}

TEST_F(ChatSessionTest, ADifferentHistoryRewindsToTheSharedPrefix) {
  auto runner = make_runner(spec_);
  auto session = llm::ChatSession::create(*runner);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(session->send("Where do swallows go in winter?", greedy(5)).ok());
  const int64_t session_tokens = static_cast<int64_t>(runner->session_tokens().size());

  // Same first characters, then a different conversation: only the shared tokens are kept.
  const json other = json::parse(R"([{"role": "user", "content": "Where do owls sleep?"}])");
  auto reply = session->respond(other, greedy(5));
  ASSERT_TRUE(reply.ok()) << reply.error().to_string();
  EXPECT_GT(reply->reused_tokens, 0);
  EXPECT_LT(reply->reused_tokens, session_tokens);
  EXPECT_EQ(reply->generation.token_ids, fresh_tokens(reply->prompt, greedy(5)));

  // A system turn first: only the leading <|im_start|> is shared.
  const json fresh = json::parse(R"([{"role": "system", "content": "x"}, {"role": "user", "content": "y"}])");
  auto restarted = session->respond(fresh, greedy(5));
  ASSERT_TRUE(restarted.ok());
  EXPECT_EQ(restarted->reused_tokens, 1);
  EXPECT_EQ(restarted->generation.token_ids, fresh_tokens(restarted->prompt, greedy(5)));
}

TEST_F(ChatSessionTest, GenerationContextWithNothingSharedStartsOver) {
  auto runner = make_runner(spec_);
  const auto config = greedy(4);
  int64_t reused = -1;
  ASSERT_TRUE(runner->generate_context({model_.im_start, 10, 11, 12}, config, nullptr, &reused).ok());
  EXPECT_EQ(reused, 0);
  auto again = runner->generate_context({model_.im_end, 10, 11, 12}, config, nullptr, &reused);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(reused, 0);
  auto fresh = make_runner(spec_)->generate_ids({model_.im_end, 10, 11, 12}, config);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ(again->token_ids, fresh->token_ids);
  // The same context again: all but the last token are reused.
  std::vector<int64_t> context = {model_.im_end, 10, 11, 12};
  context.insert(context.end(), again->token_ids.begin(), again->token_ids.end());
  context.push_back(20);
  ASSERT_TRUE(runner->generate_context(context, config, nullptr, &reused).ok());
  EXPECT_EQ(reused, static_cast<int64_t>(context.size()) - 2);  // the last reply token was not yet in the cache
}

TEST_F(ChatSessionTest, GenerationStopsAtAnEndOfTurnToken) {
  // Use a token the model really generates as the end-of-turn token.
  auto probe_runner = make_runner(spec_);
  auto probe = llm::ChatSession::create(*probe_runner);
  ASSERT_TRUE(probe.ok());
  auto unstopped = probe->send("Sing about the wind.", greedy(12));
  ASSERT_TRUE(unstopped.ok());
  const auto& tokens = unstopped->generation.token_ids;
  size_t stop_at = 2;
  while (stop_at < tokens.size() && std::find(tokens.begin(), tokens.begin() + stop_at, tokens[stop_at]) !=
                                        tokens.begin() + stop_at)
    ++stop_at;
  ASSERT_LT(stop_at, tokens.size()) << "the probe reply repeats itself";

  program::ProgramSpec spec = spec_;
  spec.metadata[keys::kEndOfTurnIds] = std::vector<int64_t>{tokens[stop_at]};
  auto runner = make_runner(spec);
  auto session = llm::ChatSession::create(*runner);
  ASSERT_TRUE(session.ok());
  auto reply = session->send("Sing about the wind.", greedy(12));
  ASSERT_TRUE(reply.ok()) << reply.error().to_string();
  EXPECT_EQ(reply->generation.stop_reason, "stop_token");
  EXPECT_EQ(reply->generation.token_ids, std::vector<int64_t>(tokens.begin(), tokens.begin() + stop_at));
  EXPECT_EQ(reply->text, *runner->tokenizer()->decode(reply->generation.token_ids));
  EXPECT_EQ(session->messages().back()["content"], reply->text);
}

TEST_F(ChatSessionTest, AFailedTurnLeavesTheConversationAsItWas) {
  auto runner = make_runner(spec_);
  auto session = llm::ChatSession::create(*runner);
  ASSERT_TRUE(session.ok());
  ASSERT_TRUE(session->send("Hello there.", greedy(4)).ok());
  const json before = session->messages();
  const auto tokens_before = runner->session_tokens();

  auto too_long = session->send(std::string(400, 'z'), greedy(4));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kCapacity);
  EXPECT_EQ(session->messages(), before);
  EXPECT_EQ(runner->session_tokens(), tokens_before);

  auto next = session->send("Short again.", greedy(4));
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  EXPECT_GT(next->reused_tokens, 0);
  EXPECT_EQ(next->generation.token_ids, fresh_tokens(next->prompt, greedy(4)));

  session->reset();
  EXPECT_TRUE(session->messages().empty());
  EXPECT_EQ(runner->position(), 0);
}

TEST_F(ChatSessionTest, TemplateWrittenBosIsNotDoubled) {
  TempDir dir;
  const auto model = write_chat_checkpoint(
      dir.file("bos"), {{"chat_template", std::string("{{ bos_token }}") + kChatmlTemplate}, {"add_bos_token", true}});
  auto runner = make_runner(export_chat_program(model.dir));
  auto session = llm::ChatSession::create(*runner);
  ASSERT_TRUE(session.ok());
  auto reply = session->send("Hi", greedy(2));
  ASSERT_TRUE(reply.ok()) << reply.error().to_string();
  const auto& ids = reply->generation.prompt_token_ids;
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], model.bos);
  EXPECT_EQ(ids[1], model.im_start);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), model.bos), 1);
}

TEST_F(ChatSessionTest, EndOfTurnIdsOutsideTheVocabularyAreRefused) {
  program::ProgramSpec spec = spec_;
  spec.metadata[keys::kEndOfTurnIds] = std::vector<int64_t>{model_.im_end, model_.vocab_size};
  auto runner = make_runner(spec);
  auto session = llm::ChatSession::create(*runner);
  ASSERT_FALSE(session.ok());
  EXPECT_NE(session.error().message().find("outside the vocabulary"), std::string::npos);
}

TEST_F(ChatSessionTest, AProgramWithoutTemplateCannotChat) {
  TempDir dir;
  const auto model = write_chat_checkpoint(dir.file("plain"), json::object());
  auto runner = make_runner(export_chat_program(model.dir));
  auto session = llm::ChatSession::create(*runner);
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(session.error().message().find("no chat template"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::testing
