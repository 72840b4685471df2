// An independent float64 forward pass of the decoder architectures Kestrel exports, written from
// the transformers modeling code's semantics (modeling_llama / mistral / qwen2 / qwen3 / gemma3 /
// phi3 / smollm3 and modeling_rope_utils): no kernels, no graph, nothing from src/export. It reads
// the fixture's config.json itself, with transformers' defaults, and its weights by their
// Hugging Face names. The oracle for exported programs.
#pragma once

#include <map>
#include <span>
#include <string>
#include <vector>

#include "kestrel/fixtures/checkpoint_writer.h"

namespace kestrel::testing {

class ReferenceModel {
 public:
  // `interleaved_rope`: llama2.c pairs (2i, 2i+1); otherwise HF rotate-half pairs (i, i+R/2).
  // `context`: the sequence length longrope picks its factors for (transformers uses the current
  // length; an exported program its max_context); 0: max_position_embeddings.
  explicit ReferenceModel(const fixtures::FixtureConfig& config, bool interleaved_rope = false, int64_t context = 0);
  // Logits for every position of `tokens`.
  std::vector<std::vector<double>> forward(const std::vector<int64_t>& tokens) const;
  // Greedy continuation of `prompt` by `count` tokens.
  std::vector<int64_t> greedy(std::vector<int64_t> prompt, int count) const;
  // Keys (after rotary embedding) and values rounded to IEEE half as they enter the cache, as a
  // program with f16 caches stores them.
  void set_f16_cache(bool on) { f16_cache_ = on; }

 private:
  struct Layer {
    int64_t window = 0;     // 0: full causal attention
    bool rope = true;       // false: NoPE
    bool local = false;     // Gemma 3 sliding layers: local rope base, no scaling
  };
  const std::vector<double>& weight(const std::string& name) const;
  std::vector<double> inverse_frequencies(bool local) const;

  std::string type_;  // model_type
  bool interleaved_;
  bool f16_cache_ = false;
  int64_t context_;
  int64_t D_ = 0, F_ = 0, L_ = 0, Hq_ = 0, Hkv_ = 0, Dh_ = 0, V_ = 0, rotary_ = 0, max_positions_ = 0;
  double eps_ = 1e-6, theta_ = 10000, local_theta_ = 10000, scale_ = 0, embed_scale_ = 1;
  std::string act_;
  bool tie_ = false, qkv_bias_ = false, o_bias_ = false, mlp_bias_ = false, qk_norm_ = false, gemma_ = false,
       fused_ = false;
  std::string rope_type_ = "default";
  std::map<std::string, double> rope_;              // scalar rope_scaling parameters
  std::vector<double> short_factor_, long_factor_;  // longrope
  std::vector<Layer> layers_;
  std::map<std::string, std::vector<double>> weights_;
};

// Largest |actual - expected| (a gtest failure when the sizes differ).
double max_abs_error(std::span<const float> actual, const std::vector<double>& expected);

}  // namespace kestrel::testing
