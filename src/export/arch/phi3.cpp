// Phi3ForCausalLM (Phi-3 / Phi-3.5-mini, Phi-4-mini): the Llama block with fused qkv_proj and
// gate_up_proj (split into plain q/k/v and gate/up at export), partial_rotary_factor (Phi-4-mini:
// 0.75) and longrope scaling; sliding_window, when set, applies to every layer. Fields from
// transformers' Phi3Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_phi3_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c, {.partial_rotary = true}));
  return read_uniform_sliding_window(r, c);
}

Architecture make_phi3() {
  Architecture a;
  a.name = "Phi3ForCausalLM";
  a.model_types = {"phi3"};
  a.names.q = a.names.k = a.names.v = "";
  a.names.qkv = "self_attn.qkv_proj";
  a.names.gate = a.names.up = "";
  a.names.gate_up = "mlp.gate_up_proj";
  a.fields = common_fields({.vocab_size = 32064, .max_position_embeddings = 4096, .rms_norm_eps = 1e-5,
                            .rope_theta = 10000.0, .tie_word_embeddings = false});
  a.fields.push_back({"sliding_window", nullptr});
  for (auto& field : a.fields)
    if (field.key == "original_max_position_embeddings") field.fallback = 4096;
  a.read_config = read_phi3_config;
  return a;
}

}  // namespace

const Architecture& phi3() {
  static const Architecture kArchitecture = make_phi3();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
