// Qwen2ForCausalLM: the Llama block with q/k/v biases (no o bias); layers from
// max_window_layers on slide when use_sliding_window is set. Fields from transformers'
// Qwen2Config.
#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

Status read(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c, /*reads_head_dim=*/true));
  KESTREL_RETURN_IF_ERROR(read_rope(r, c));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_act", c));
  c.attention_bias = true;  // Qwen2Attention always has q/k/v biases
  return read_qwen_sliding_window(r, c);
}

}  // namespace

const Architecture& qwen2() {
  static const Architecture kQwen2 = [] {
    Architecture a;
    a.name = "Qwen2ForCausalLM";
    a.model_types = {"qwen2"};
    a.fields = common_fields(151936, 32768, 1e-6, 10000.0, false);
    a.fields.push_back({"head_dim", nullptr});  // default hidden_size / num_attention_heads
    a.fields.push_back({"hidden_act", "silu"});
    a.fields.push_back({"use_sliding_window", false});
    a.fields.push_back({"sliding_window", 4096});
    a.fields.push_back({"max_window_layers", 28});
    a.fields.push_back({"layer_types", nullptr});
    a.read_config = read;
    return a;
  }();
  return kQwen2;
}

}  // namespace kestrel::exporter::arch
