// MistralForCausalLM: the Llama block without biases; every layer attends to the last
// sliding_window positions when sliding_window is set. Fields from transformers' MistralConfig.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c, /*reads_head_dim=*/true));
  KESTREL_RETURN_IF_ERROR(read_rope(r, c));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_act", c));
  // An explicit null turns the window off; an absent key means transformers' default 4096.
  const auto it = r.object().find("sliding_window");
  const bool explicit_null = it != r.object().end() && it->is_null();
  c.sliding_window = 0;
  if (!explicit_null) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  }
  for (LayerSpec& layer : c.layers) layer.sliding = c.sliding_window > 0;
  return ok_status();
}

}  // namespace

const Architecture& mistral() {
  static const Architecture kMistral = [] {
    Architecture a;
    a.name = "MistralForCausalLM";
    a.model_types = {"mistral"};
    a.fields = common_fields(32000, 131072, 1e-6, 10000.0, false);
    a.fields.push_back({"head_dim", nullptr});  // default hidden_size / num_attention_heads
    a.fields.push_back({"hidden_act", "silu"});
    a.fields.push_back({"sliding_window", 4096});
    a.read_config = read;
    return a;
  }();
  return kMistral;
}

}  // namespace kestrel::exporter::arch
