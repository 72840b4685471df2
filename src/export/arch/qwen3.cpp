// Qwen3ForCausalLM: the Llama block with a per-head RMSNorm of q and k (q_norm, k_norm, eps
// rms_norm_eps) before rope, and a head_dim of its own (default 128, not hidden / heads);
// attention_bias puts biases on q, k, v and o. Sliding layers as Qwen2. Fields from
// transformers' Qwen3Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c, /*reads_head_dim=*/true));
  KESTREL_RETURN_IF_ERROR(read_rope(r, c));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_act", c));
  KESTREL_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias"));
  c.o_proj_bias = c.attention_bias;
  return read_qwen_sliding_window(r, c);
}

}  // namespace

const Architecture& qwen3() {
  static const Architecture kQwen3 = [] {
    Architecture a;
    a.name = "Qwen3ForCausalLM";
    a.model_types = {"qwen3"};
    a.names.q_norm = "self_attn.q_norm.weight";
    a.names.k_norm = "self_attn.k_norm.weight";
    a.features.qk_norm = true;
    a.fields = common_fields(151936, 32768, 1e-6, 10000.0, false);
    a.fields.push_back({"head_dim", 128});
    a.fields.push_back({"hidden_act", "silu"});
    a.fields.push_back({"attention_bias", false});
    a.fields.push_back({"use_sliding_window", false});
    a.fields.push_back({"sliding_window", 4096});
    a.fields.push_back({"max_window_layers", 28});
    a.fields.push_back({"layer_types", nullptr});
    a.read_config = read;
    return a;
  }();
  return kQwen3;
}

}  // namespace kestrel::exporter::arch
