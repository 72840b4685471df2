// An independent float64 forward pass of a Llama-family decoder, written from the model
// definition (no kernels, no graph): the oracle for exported programs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kestrel/fixtures/checkpoint_writer.h"

namespace kestrel::testing {

class ReferenceModel {
 public:
  // `interleaved_rope`: llama2.c pairs (2i, 2i+1); otherwise HF rotate-half pairs (i, i+D/2).
  ReferenceModel(const fixtures::FixtureConfig& config, bool interleaved_rope = false);
  // Logits for every position of `tokens`, computed with full causal attention.
  std::vector<std::vector<double>> forward(const std::vector<int64_t>& tokens) const;
  // Greedy continuation of `prompt` by `count` tokens.
  std::vector<int64_t> greedy(std::vector<int64_t> prompt, int count) const;

 private:
  const std::vector<double>& weight(const std::string& name) const;
  std::vector<double> inverse_frequencies() const;

  fixtures::FixtureConfig config_;
  bool interleaved_;
  std::map<std::string, std::vector<double>> weights_;
};

}  // namespace kestrel::testing
