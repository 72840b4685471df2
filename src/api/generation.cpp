#include "kestrel/api/generation.h"

#include <random>

namespace kestrel::api {

llm::GenerationConfig generation_config(const GenerationSettings& settings) {
  llm::GenerationConfig config;
  config.max_new_tokens = settings.max_new_tokens;
  config.stop_strings = settings.stop;
  config.add_bos = settings.add_bos;
  config.stop_at_eos = !settings.ignore_eos;
  config.sampler.temperature = settings.temperature;
  config.sampler.top_k = settings.top_k;
  config.sampler.top_p = settings.top_p;
  config.sampler.min_p = settings.min_p;
  config.sampler.repetition_penalty = settings.repeat_penalty;
  config.sampler.repetition_last_n = settings.repeat_last_n;
  if (settings.seed) {
    config.sampler.seed = *settings.seed;
  } else {
    std::random_device device;
    config.sampler.seed = (static_cast<uint64_t>(device()) << 32) | device();
  }
  return config;
}

}  // namespace kestrel::api
