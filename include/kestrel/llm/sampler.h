// Token sampling with llama.cpp-like semantics and a deterministic, portable PRNG.
//
// Order: repetition penalty -> (temperature 0: argmax) -> top-k -> softmax with temperature
// -> top-p -> min-p -> draw. The same seed gives the same sequence on every platform and
// standard library (xoshiro256** seeded through splitmix64; no std::*_distribution).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::llm {

struct SamplerConfig {
  float temperature = 0.8f;         // 0 => greedy (argmax, the lowest id on ties)
  int top_k = 40;                   // 0 => off
  float top_p = 0.95f;              // 1 => off; keep the smallest set with cumulative p >= top_p
  float min_p = 0.05f;              // 0 => off; drop tokens with p < min_p * p_max
  float repetition_penalty = 1.0f;  // 1 => off; > 1 discourages tokens seen in the last n
  int repetition_last_n = 64;       // 0 => off; -1 => the whole history
  uint64_t seed = 0;

  // temperature finite and >= 0; top_k >= 0; top_p in (0, 1]; min_p in [0, 1];
  // repetition_penalty finite and > 0; repetition_last_n >= -1.
  Status validate() const;
};

// Greedy decoding preset: temperature 0, no other filter.
SamplerConfig greedy_sampler_config();

class Sampler {
 public:
  // Call config.validate() first; out-of-range fields are clamped to the nearest valid value.
  explicit Sampler(SamplerConfig config);

  // A token id in [0, logits.size()), or -1 when logits is empty. `history` holds the tokens
  // seen so far (prompt and generated), oldest first; ids outside the logits are ignored. NaN
  // logits count as -inf.
  int64_t sample(std::span<const float> logits, std::span<const int64_t> history = {});

  // Restarts the random sequence as if constructed with this seed.
  void reseed(uint64_t seed);

  const SamplerConfig& config() const { return config_; }

  // Next value of the generator in [0, 1) (53 random bits); exposed for tests.
  double next_uniform();

 private:
  SamplerConfig config_;
  std::array<uint64_t, 4> state_{};
  std::vector<float> scratch_logits_;
  std::vector<int32_t> scratch_ids_;
  std::vector<double> scratch_probs_;
  std::vector<double> scratch_weights_;
};

}  // namespace kestrel::llm
