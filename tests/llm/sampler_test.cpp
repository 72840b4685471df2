#include "kestrel/llm/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kestrel::llm {
namespace {

SamplerConfig plain(float temperature, uint64_t seed = 7) {
  SamplerConfig c;
  c.temperature = temperature;
  c.top_k = 0;
  c.top_p = 1;
  c.min_p = 0;
  c.seed = seed;
  return c;
}

std::vector<float> ramp_logits(size_t n, uint64_t salt) {
  std::vector<float> l(n);
  uint64_t x = salt * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    l[i] = static_cast<float>((x >> 40) % 1000) / 100.0f;
  }
  return l;
}

TEST(Sampler, GreedyPicksArgmaxFirstOnTies) {
  Sampler s(greedy_sampler_config());
  EXPECT_EQ(s.sample(std::vector<float>{0.1f, 3.0f, -2.0f, 2.9f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{1.0f, 5.0f, 5.0f, 5.0f}), 1);
  EXPECT_EQ(s.sample(std::vector<float>{-1.0f}), 0);
  EXPECT_EQ(s.sample(std::vector<float>{}), -1);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(s.sample(std::vector<float>{nan, -5.0f, nan}), 1);
}

TEST(Sampler, SameSeedSameSequence) {
  SamplerConfig c;  // defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05
  c.seed = 1234;
  c.min_p = 0;
  Sampler a(c), b(c);
  std::vector<int64_t> seq_a, seq_b;
  for (uint64_t step = 0; step < 200; ++step) {
    const auto logits = ramp_logits(500, step);
    seq_a.push_back(a.sample(logits, seq_a));
    seq_b.push_back(b.sample(logits, seq_b));
  }
  EXPECT_EQ(seq_a, seq_b);
  // Not a constant sequence: sampling really draws.
  EXPECT_GT(std::count_if(seq_a.begin(), seq_a.end(), [&](int64_t v) { return v != seq_a[0]; }), 10);
  // reseed restarts the stream.
  a.reseed(1234);
  std::vector<int64_t> again;
  for (uint64_t step = 0; step < 200; ++step) again.push_back(a.sample(ramp_logits(500, step), again));
  EXPECT_EQ(again, seq_a);
  // Another seed gives another sequence.
  c.seed = 99;
  Sampler other(c);
  std::vector<int64_t> seq_c;
  for (uint64_t step = 0; step < 200; ++step) seq_c.push_back(other.sample(ramp_logits(500, step), seq_c));
  EXPECT_NE(seq_c, seq_a);
}

TEST(Sampler, PrngIsPortable) {
  // splitmix64-seeded xoshiro256**: fixed values, the same on every platform.
  Sampler s(plain(1.0f, 0));
  const double u0 = s.next_uniform();
  const double u1 = s.next_uniform();
  Sampler t(plain(1.0f, 0));
  EXPECT_EQ(t.next_uniform(), u0);
  EXPECT_EQ(t.next_uniform(), u1);
  EXPECT_GE(u0, 0.0);
  EXPECT_LT(u0, 1.0);
  EXPECT_NE(u0, u1);
}

TEST(Sampler, TopKOneAndTinyTopPEqualGreedy) {
  for (uint64_t step = 0; step < 50; ++step) {
    const auto logits = ramp_logits(300, step);
    Sampler greedy(greedy_sampler_config());
    SamplerConfig k1 = plain(1.5f, step);
    k1.top_k = 1;
    SamplerConfig p_tiny = plain(1.5f, step);
    p_tiny.top_p = 1e-6f;
    Sampler a(k1), b(p_tiny);
    const int64_t expected = greedy.sample(logits);
    EXPECT_EQ(a.sample(logits), expected);
    EXPECT_EQ(b.sample(logits), expected);
  }
}

TEST(Sampler, MinPFilters) {
  // p ~ softmax(0, -1, -10): the third token has p/p_max = e^-10 << 0.01.
  const std::vector<float> logits = {0.0f, -1.0f, -10.0f};
  SamplerConfig c = plain(1.0f, 3);
  c.min_p = 0.01f;
  Sampler s(c);
  int count_third = 0, count_second = 0;
  for (int i = 0; i < 5000; ++i) {
    const int64_t id = s.sample(logits);
    count_third += id == 2;
    count_second += id == 1;
  }
  EXPECT_EQ(count_third, 0);
  EXPECT_GT(count_second, 1000);  // e^-1 / (1 + e^-1) ~ 27%
  // min_p = 0.5 keeps only the first (e^-1 ~ 0.37 < 0.5).
  c.min_p = 0.5f;
  Sampler strict(c);
  for (int i = 0; i < 200; ++i) EXPECT_EQ(strict.sample(logits), 0);
}

TEST(Sampler, TopPKeepsSmallestSufficientSet) {
  // Probabilities 0.5, 0.3, 0.2 (logits are their logs): top_p 0.75 keeps {0, 1}.
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  SamplerConfig c = plain(1.0f, 11);
  c.top_p = 0.75f;
  Sampler s(c);
  int seen[3] = {0, 0, 0};
  for (int i = 0; i < 4000; ++i) ++seen[s.sample(logits)];
  EXPECT_EQ(seen[2], 0);
  EXPECT_GT(seen[1], 1000);  // 0.3 / 0.8 = 37.5%
}

TEST(Sampler, TopKRestrictsCandidates) {
  const std::vector<float> logits = {1.0f, 0.9f, 0.8f, 0.7f, 0.6f};
  SamplerConfig c = plain(5.0f, 5);
  c.top_k = 2;
  Sampler s(c);
  for (int i = 0; i < 1000; ++i) EXPECT_LT(s.sample(logits), 2);
}

TEST(Sampler, RepetitionPenaltyChangesArgmax) {
  // Token 0 leads (2.0 vs 1.5) but was just generated: 2.0 / 1.5 = 1.33 < 1.5.
  const std::vector<float> logits = {2.0f, 1.5f, -1.0f};
  SamplerConfig c = greedy_sampler_config();
  c.repetition_penalty = 1.5f;
  c.repetition_last_n = 4;
  Sampler s(c);
  EXPECT_EQ(s.sample(logits, std::vector<int64_t>{}), 0);
  EXPECT_EQ(s.sample(logits, std::vector<int64_t>{0}), 1);
  // Outside the last-n window the token is not penalized.
  EXPECT_EQ(s.sample(logits, std::vector<int64_t>{0, 2, 2, 2, 2}), 0);
  // Repeats count once; out-of-range ids are ignored.
  EXPECT_EQ(s.sample(logits, std::vector<int64_t>{0, 0, 0, 99, -5}), 1);
  // Negative logits are multiplied: with both positives penalized and a negative one, the
  // negative gets more negative.
  const std::vector<float> neg = {-0.5f, -0.6f};
  EXPECT_EQ(s.sample(neg, std::vector<int64_t>{0}), 1);  // -0.75 < -0.6
  // last_n = 0 turns it off; -1 uses the whole history.
  c.repetition_last_n = 0;
  EXPECT_EQ(Sampler(c).sample(logits, std::vector<int64_t>{0}), 0);
  c.repetition_last_n = -1;
  EXPECT_EQ(Sampler(c).sample(logits, std::vector<int64_t>{0, 2, 2, 2, 2, 2, 2, 2}), 1);
}

TEST(Sampler, TemperatureOneMatchesSoftmax) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  double expected[3];
  double sum = 0;
  for (int i = 0; i < 3; ++i) sum += std::exp(logits[i]);
  for (int i = 0; i < 3; ++i) expected[i] = std::exp(logits[i]) / sum;
  Sampler s(plain(1.0f, 2024));
  constexpr int kDraws = 30000;
  int counts[3] = {0, 0, 0};
  for (int i = 0; i < kDraws; ++i) ++counts[s.sample(logits)];
  double chi2 = 0;
  for (int i = 0; i < 3; ++i) {
    const double e = expected[i] * kDraws;
    chi2 += (counts[i] - e) * (counts[i] - e) / e;
  }
  // 2 degrees of freedom: P(chi2 > 13.8) = 0.001.
  EXPECT_LT(chi2, 13.8) << counts[0] << " " << counts[1] << " " << counts[2];
}

TEST(Sampler, LowTemperatureSharpens) {
  const std::vector<float> logits = {0.0f, 1.0f, 2.0f};
  Sampler cold(plain(0.1f, 1));
  int top = 0;
  for (int i = 0; i < 2000; ++i) top += cold.sample(logits) == 2;
  EXPECT_GT(top, 1990);  // p = 1 / (1 + e^-10 + e^-20)
}

TEST(Sampler, InvalidConfigsRejected) {
  EXPECT_TRUE(SamplerConfig{}.validate().ok());
  EXPECT_TRUE(greedy_sampler_config().validate().ok());
  const auto invalid = [](auto mutate, const char* field) {
    SamplerConfig c;
    mutate(c);
    const Status s = c.validate();
    EXPECT_FALSE(s.ok()) << field;
    if (!s.ok()) {
      EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(s.error().message().find(field), std::string::npos) << s.error().message();
    }
  };
  invalid([](SamplerConfig& c) { c.temperature = -0.1f; }, "temperature");
  invalid([](SamplerConfig& c) { c.temperature = std::numeric_limits<float>::infinity(); }, "temperature");
  invalid([](SamplerConfig& c) { c.temperature = std::numeric_limits<float>::quiet_NaN(); }, "temperature");
  invalid([](SamplerConfig& c) { c.top_k = -1; }, "top_k");
  invalid([](SamplerConfig& c) { c.top_p = 0.0f; }, "top_p");
  invalid([](SamplerConfig& c) { c.top_p = 1.5f; }, "top_p");
  invalid([](SamplerConfig& c) { c.min_p = -0.1f; }, "min_p");
  invalid([](SamplerConfig& c) { c.min_p = 2.0f; }, "min_p");
  invalid([](SamplerConfig& c) { c.repetition_penalty = 0.0f; }, "repetition_penalty");
  invalid([](SamplerConfig& c) { c.repetition_last_n = -2; }, "repetition_last_n");
  SamplerConfig edge;
  edge.top_p = 1.0f;
  edge.min_p = 1.0f;
  edge.temperature = 0.0f;
  EXPECT_TRUE(edge.validate().ok());
}

TEST(Sampler, InvalidConfigIsClampedNotUndefined) {
  SamplerConfig c;
  c.temperature = -3.0f;  // clamps to greedy
  c.top_p = 7.0f;
  Sampler s(c);
  EXPECT_EQ(s.sample(std::vector<float>{0.0f, 4.0f, 1.0f}), 1);
}

TEST(Sampler, AllNegativeInfinityStillReturnsAnId) {
  const float inf = std::numeric_limits<float>::infinity();
  Sampler s(plain(1.0f));
  EXPECT_EQ(s.sample(std::vector<float>{-inf, -inf}), 0);
  EXPECT_EQ(s.sample(std::vector<float>{-inf, 0.0f, -inf}), 1);
}

}  // namespace
}  // namespace kestrel::llm
