// The runner's caller hooks: the last step's logits (checked against the float64 reference
// model) and the per-token callback that stops a generation between tokens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kestrel/llm/runner.h"
#include "llm/reference_model.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

const program::ProgramSpec& hooks_spec() {
  static const program::ProgramSpec spec = export_fixture(small_fixture(), small_export(4, 48));
  return spec;
}

std::unique_ptr<llm::Runner> make_runner() {
  auto runner = llm::Runner::from_program(load_spec(hooks_spec()));
  EXPECT_TRUE(runner.ok()) << runner.error().to_string();
  return std::move(runner).value();
}

llm::GenerationConfig greedy(int64_t n) {
  llm::GenerationConfig config;
  config.max_new_tokens = n;
  config.sampler.temperature = 0;
  config.stop_at_eos = false;
  return config;
}

double max_abs_error(std::span<const float> got, const std::vector<double>& expected) {
  EXPECT_EQ(got.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(got.size(), expected.size()); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(got[i]) - expected[i]));
  return worst;
}

TEST(RunnerHooks, LastLogitsAreTheReferenceScoresOfTheLastStep) {
  auto runner = make_runner();
  EXPECT_TRUE(runner->last_logits().empty());
  const ReferenceModel reference(small_fixture());
  std::vector<int64_t> tokens{1, 17, 42, 5, 88, 23};

  // No new tokens: the prompt runs through the model and nothing is sampled.
  auto scored = runner->generate_ids(tokens, greedy(0));
  ASSERT_TRUE(scored.ok()) << scored.error().to_string();
  EXPECT_TRUE(scored->token_ids.empty());
  EXPECT_LE(max_abs_error(runner->last_logits(), reference.forward(tokens).back()), 1e-4);

  // After generating n tokens the model has seen the first n - 1 of them (the last one is
  // sampled from these logits and enters the cache with the next request).
  runner->reset();
  EXPECT_TRUE(runner->last_logits().empty());
  auto generated = runner->generate_ids(tokens, greedy(4));
  ASSERT_TRUE(generated.ok()) << generated.error().to_string();
  ASSERT_EQ(generated->token_ids.size(), 4u);
  const auto logits = runner->last_logits();
  EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(), generated->token_ids.back());
  tokens.insert(tokens.end(), generated->token_ids.begin(), generated->token_ids.end() - 1);
  EXPECT_LE(max_abs_error(logits, reference.forward(tokens).back()), 1e-4);
}

TEST(RunnerHooks, TokenCallbackSeesEachTokenAndStopsBetweenTokens) {
  auto runner = make_runner();
  const auto whole = runner->generate_ids({1, 2, 3}, greedy(8));
  ASSERT_TRUE(whole.ok());

  auto fresh = make_runner();
  std::vector<int64_t> seen;
  auto config = greedy(8);
  config.on_token = [&](int64_t token) {
    seen.push_back(token);
    return seen.size() < 3;
  };
  auto stopped = fresh->generate_ids({1, 2, 3}, config);
  ASSERT_TRUE(stopped.ok()) << stopped.error().to_string();
  EXPECT_EQ(stopped->stop_reason, "callback");
  EXPECT_EQ(seen, std::vector<int64_t>(whole->token_ids.begin(), whole->token_ids.begin() + 3));
  EXPECT_EQ(stopped->token_ids, seen);

  // The session stays usable: the next turn continues exactly as an uninterrupted one would.
  auto next = fresh->generate_ids({9, 10}, greedy(4));
  auto reference_session = make_runner();
  ASSERT_TRUE(reference_session->generate_ids({1, 2, 3}, greedy(3)).ok());
  auto expected = reference_session->generate_ids({9, 10}, greedy(4));
  ASSERT_TRUE(next.ok() && expected.ok());
  EXPECT_EQ(next->token_ids, expected->token_ids);
}

}  // namespace
}  // namespace kestrel::testing
