// The user-facing settings of one generation request (`kestrel run`'s flags, the Python
// module's keyword arguments) and the runner config they make.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/llm/runner.h"

namespace kestrel::api {

struct GenerationSettings {
  int64_t max_new_tokens = 128;
  float temperature = 0.8f;     // 0: greedy
  int top_k = 40;               // 0: off
  float top_p = 0.95f;          // 1: off
  float min_p = 0.05f;          // 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int repeat_last_n = 64;
  std::optional<uint64_t> seed;  // none: a random seed
  std::vector<std::string> stop;
  bool add_bos = true;
  bool ignore_eos = false;
};

// The config for `settings`; config.sampler.seed holds the seed it samples with (a random one
// when settings.seed is none). Values are checked when the request runs (SamplerConfig::validate).
llm::GenerationConfig generation_config(const GenerationSettings& settings);

}  // namespace kestrel::api
