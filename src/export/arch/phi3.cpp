// Phi3ForCausalLM (Phi-3 / Phi-3.5-mini, Phi-4-mini): the Llama block with fused qkv_proj and
// gate_up_proj (split into plain q/k/v and gate/up at export), partial_rotary_factor (Phi-4-mini:
// 0.75) and longrope scaling; sliding_window, when set, applies to every layer. Fields from
// transformers' Phi3Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c, /*reads_head_dim=*/true));
  RopeOptions rope;
  rope.partial_rotary = true;
  KESTREL_RETURN_IF_ERROR(read_rope(r, c, rope));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_act", c));
  c.sliding_window = 0;
  if (r.has("sliding_window")) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  }
  for (LayerSpec& layer : c.layers) layer.sliding = c.sliding_window > 0;
  return ok_status();
}

}  // namespace

const Architecture& phi3() {
  static const Architecture kPhi3 = [] {
    Architecture a;
    a.name = "Phi3ForCausalLM";
    a.model_types = {"phi3"};
    a.names.q = a.names.k = a.names.v = "";
    a.names.qkv = "self_attn.qkv_proj";
    a.names.gate = a.names.up = "";
    a.names.gate_up = "mlp.gate_up_proj";
    a.fields = common_fields(32064, 4096, 1e-5, 10000.0, false);
    a.fields.push_back({"head_dim", nullptr});  // default hidden_size / num_attention_heads
    a.fields.push_back({"hidden_act", "silu"});
    a.fields.push_back({"sliding_window", nullptr});
    for (auto& field : a.fields)
      if (field.key == "original_max_position_embeddings") field.fallback = 4096;
    a.read_config = read;
    return a;
  }();
  return kPhi3;
}

}  // namespace kestrel::exporter::arch
