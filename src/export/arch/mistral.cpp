// MistralForCausalLM: the Llama block without biases; every layer attends to the last
// sliding_window positions (transformers' default 4096; null turns it off). Fields from
// transformers' MistralConfig.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_mistral_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c));
  return read_uniform_sliding_window(r, c);
}

Architecture make_mistral() {
  Architecture a;
  a.name = "MistralForCausalLM";
  a.model_types = {"mistral"};
  a.fields = common_fields({.vocab_size = 32000, .max_position_embeddings = 131072, .rms_norm_eps = 1e-6,
                            .rope_theta = 10000.0, .tie_word_embeddings = false});
  a.fields.push_back({"sliding_window", 4096});
  a.read_config = read_mistral_config;
  return a;
}

}  // namespace

const Architecture& mistral() {
  static const Architecture kArchitecture = make_mistral();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
