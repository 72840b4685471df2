// LlamaForCausalLM (Llama 2/3, Llama 3.2 with tied embeddings, SmolLM / SmolLM2): the plain
// pre-norm decoder. Fields and defaults from transformers' LlamaConfig.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c, /*reads_head_dim=*/true));
  KESTREL_RETURN_IF_ERROR(read_rope(r, c));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_act", c));
  // attention_bias puts a bias on q, k, v and o; mlp_bias on gate, up and down.
  KESTREL_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias"));
  c.o_proj_bias = c.attention_bias;
  KESTREL_ASSIGN_OR_RETURN(c.mlp_bias, r.boolean("mlp_bias"));
  return ok_status();
}

}  // namespace

const Architecture& llama() {
  static const Architecture kLlama = [] {
    Architecture a;
    a.name = "LlamaForCausalLM";
    a.model_types = {"llama"};
    a.fields = common_fields(32000, 2048, 1e-6, 10000.0, false);
    a.fields.push_back({"head_dim", nullptr});  // default hidden_size / num_attention_heads
    a.fields.push_back({"hidden_act", "silu"});
    a.fields.push_back({"attention_bias", false});
    a.fields.push_back({"mlp_bias", false});
    a.read_config = read;
    return a;
  }();
  return kLlama;
}

}  // namespace kestrel::exporter::arch
