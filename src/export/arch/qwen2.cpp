// Qwen2ForCausalLM: the Llama block with q/k/v biases (no o bias); layers from
// max_window_layers on slide when use_sliding_window is set. Fields from transformers'
// Qwen2Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_qwen2_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c));
  c.attention_bias = true;  // Qwen2Attention always has q/k/v biases
  return read_qwen_sliding_window(r, c);
}

Architecture make_qwen2() {
  Architecture a;
  a.name = "Qwen2ForCausalLM";
  a.model_types = {"qwen2"};
  a.fields = common_fields({.vocab_size = 151936, .max_position_embeddings = 32768, .rms_norm_eps = 1e-6,
                            .rope_theta = 10000.0, .tie_word_embeddings = false});
  for (ConfigField field : qwen_sliding_fields()) a.fields.push_back(std::move(field));
  a.read_config = read_qwen2_config;
  return a;
}

}  // namespace

const Architecture& qwen2() {
  static const Architecture kArchitecture = make_qwen2();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
