// The runner with the program's embedded tokenizer: text in, streamed text out, stop strings.
#include <gtest/gtest.h>

#include "kestrel/export/checkpoint.h"
#include "kestrel/fixtures/default_model.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/llm/runner.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

std::unique_ptr<llm::Runner> default_model_runner() {
  TempDir dir;
  EXPECT_TRUE(fixtures::write_default_model(dir.file("model")).ok());
  auto checkpoint = exporter::load_checkpoint(dir.file("model"));
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  auto spec = exporter::export_program(*checkpoint, small_export(8, 96));
  EXPECT_TRUE(spec.ok()) << spec.error().to_string();
  auto runner = llm::Runner::from_program(load_spec(*spec));
  EXPECT_TRUE(runner.ok()) << runner.error().to_string();
  return std::move(runner).value();
}

TEST(RunnerText, StreamsValidTextThatMatchesTheTokens) {
  auto runner = default_model_runner();
  ASSERT_NE(runner->tokenizer(), nullptr);
  std::string streamed;
  auto result = runner->generate("The little bird sang", greedy_tokens(24), [&](const std::string& piece) {
    streamed += piece;
    return true;
  });
  ASSERT_TRUE(result.ok()) << result.error().to_string();
  EXPECT_EQ(streamed, result->text);
  EXPECT_EQ(result->token_ids.size(), 24u);
  // The prompt starts with bos and encodes the text.
  EXPECT_EQ(result->prompt_token_ids.front(), runner->model_info().bos_id);
  auto decoded = runner->tokenizer()->decode(result->token_ids);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*decoded, result->text);
}

TEST(RunnerText, StopStringCutsTheTextAndStops) {
  auto runner = default_model_runner();
  auto full = runner->generate("Rain fell on the hills", greedy_tokens(24));
  ASSERT_TRUE(full.ok());
  ASSERT_GE(full->text.size(), 8u);
  const std::string stop = full->text.substr(full->text.size() / 2, 3);
  const size_t cut = full->text.find(stop);

  runner->reset();
  auto config = greedy_tokens(24);
  config.stop_strings = {stop};
  std::string streamed;
  auto stopped = runner->generate("Rain fell on the hills", config, [&](const std::string& piece) {
    streamed += piece;
    return true;
  });
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->stop_reason, "stop_string");
  EXPECT_EQ(stopped->text, full->text.substr(0, cut));
  EXPECT_EQ(streamed, stopped->text);
  EXPECT_LT(stopped->token_ids.size(), full->token_ids.size());
}

TEST(RunnerText, CallbackCanStopGeneration) {
  auto runner = default_model_runner();
  int calls = 0;
  auto result = runner->generate("Birds", greedy_tokens(30), [&](const std::string&) { return ++calls < 3; });
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->stop_reason, "callback");
  EXPECT_LT(result->token_ids.size(), 30u);
}

TEST(RunnerText, DefaultModelPredictsItsCorpus) {
  // The default model's embedding and head are fitted to the corpus bigrams: the true next
  // token should usually be among its top 5 (a random model would manage about 1%).
  auto runner = default_model_runner();
  auto ids = runner->tokenizer()->encode(fixtures::default_corpus(), false);
  ASSERT_TRUE(ids.ok());
  const size_t count = std::min<size_t>(ids->size(), 90);
  int hits = 0;
  for (size_t t = 0; t + 1 < count; ++t) {
    auto logits = runner->io_manager().forward(std::span<const int64_t>(&(*ids)[t], 1), static_cast<int64_t>(t));
    ASSERT_TRUE(logits.ok());
    const float truth = (*logits)[(*ids)[t + 1]];
    int better = 0;
    for (float value : *logits) better += value > truth;
    hits += better < 5;
  }
  EXPECT_GT(hits, static_cast<int>(count) / 2) << hits << " of " << count - 1;
}

}  // namespace
}  // namespace kestrel::testing
