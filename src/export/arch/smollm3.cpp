// SmolLM3ForCausalLM: the Llama block where some layers skip the rotary embedding (NoPE):
// no_rope_layers[i] = 1 means layer i uses rope, 0 that it does not; without the list every
// no_rope_layer_interval-th layer is NoPE. With use_sliding_window, the NoPE layers slide.
// Fields and defaults from transformers' SmolLM3Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read_smollm3_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_decoder(r, c));
  KESTREL_RETURN_IF_ERROR(read_attention_bias(r, c));
  KESTREL_ASSIGN_OR_RETURN(c.mlp_bias, r.boolean("mlp_bias"));
  if (const nlohmann::json* list = r.find("no_rope_layers")) {
    if (!list->is_array() || static_cast<int64_t>(list->size()) < c.num_layers)
      return r.invalid("no_rope_layers", fmt::format("needs at least one 0/1 entry per layer ({})", c.num_layers));
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const nlohmann::json& flag = (*list)[static_cast<size_t>(i)];
      if (flag != 0 && flag != 1) return r.invalid("no_rope_layers", fmt::format("entry {} is not 0 or 1", i));
      c.layers[i].rope = flag == 1;
    }
  } else {
    KESTREL_ASSIGN_OR_RETURN(int64_t interval, r.positive("no_rope_layer_interval", kMaxLayers + 1));
    for (int64_t i = 0; i < c.num_layers; ++i) c.layers[i].rope = (i + 1) % interval != 0;
  }
  KESTREL_ASSIGN_OR_RETURN(bool use_sliding, r.boolean("use_sliding_window"));
  c.sliding_window = 0;
  if (use_sliding && r.has("sliding_window")) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  }
  return read_layer_types(r, c, [&](int64_t i) { return c.sliding_window > 0 && !c.layers[i].rope; });
}

Architecture make_smollm3() {
  Architecture a;
  a.name = "SmolLM3ForCausalLM";
  a.model_types = {"smollm3"};
  a.fields = common_fields({.vocab_size = 128256, .max_position_embeddings = 32768, .rms_norm_eps = 1e-6,
                            .rope_theta = 2000000.0, .tie_word_embeddings = true});
  for (const char* flag : {"attention_bias", "mlp_bias", "use_sliding_window"}) a.fields.push_back({flag, false});
  a.fields.push_back({"no_rope_layers", nullptr});
  a.fields.push_back({"no_rope_layer_interval", 4});
  a.fields.push_back({"sliding_window", nullptr});
  a.fields.push_back({"layer_types", nullptr});
  a.read_config = read_smollm3_config;
  return a;
}

}  // namespace

const Architecture& smollm3() {
  static const Architecture kArchitecture = make_smollm3();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
