// Qwen3ForCausalLM: the Llama block with a per-head RMSNorm of q and k (q_norm, k_norm, eps
// rms_norm_eps) before rope, and a head_dim of its own (default 128, not hidden / heads);
// attention_bias puts biases on q, k, v and o. Sliding layers as Qwen2. Fields from
// transformers' Qwen3Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_qwen3_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c));
  KESTREL_RETURN_IF_ERROR(read_attention_bias(r, c));
  return read_qwen_sliding_window(r, c);
}

Architecture make_qwen3() {
  Architecture a;
  a.name = "Qwen3ForCausalLM";
  a.model_types = {"qwen3"};
  a.names.q_norm = "self_attn.q_norm.weight";
  a.names.k_norm = "self_attn.k_norm.weight";
  a.features.qk_norm = true;
  a.fields = common_fields({.vocab_size = 151936, .max_position_embeddings = 32768, .rms_norm_eps = 1e-6,
                            .rope_theta = 10000.0, .tie_word_embeddings = false, .head_dim = 128});
  a.fields.push_back({"attention_bias", false});
  for (ConfigField field : qwen_sliding_fields()) a.fields.push_back(std::move(field));
  a.read_config = read_qwen3_config;
  return a;
}

}  // namespace

const Architecture& qwen3() {
  static const Architecture kArchitecture = make_qwen3();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
