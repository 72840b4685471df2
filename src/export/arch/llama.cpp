// LlamaForCausalLM (Llama 2/3, Llama 3.2 with tied embeddings, SmolLM / SmolLM2): the plain
// pre-norm decoder. Fields and defaults from transformers' LlamaConfig.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_llama_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c));
  KESTREL_RETURN_IF_ERROR(read_attention_bias(r, c));
  KESTREL_ASSIGN_OR_RETURN(c.mlp_bias, r.boolean("mlp_bias"));  // gate, up and down
  return ok_status();
}

Architecture make_llama() {
  Architecture a;
  a.name = "LlamaForCausalLM";
  a.model_types = {"llama"};
  a.fields = common_fields({.vocab_size = 32000, .max_position_embeddings = 2048, .rms_norm_eps = 1e-6,
                            .rope_theta = 10000.0, .tie_word_embeddings = false});
  a.fields.push_back({"attention_bias", false});
  a.fields.push_back({"mlp_bias", false});
  a.read_config = read_llama_config;
  return a;
}

}  // namespace

const Architecture& llama() {
  static const Architecture kArchitecture = make_llama();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
