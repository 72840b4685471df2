// The architecture table: one entry per checkpoint architecture Kestrel exports, each defined
// in its own file under src/export/arch/. An entry declares the config.json fields it reads
// (with the defaults transformers uses), the names of its tensors (fused ones included) and
// the decoder features it needs. The HF and llama2.c importers, the decoder builder and the
// fixture writer all take tensor names from here.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::exporter {

struct ModelConfig;
class ConfigReader;

// Checkpoint tensor names. Layer names are suffixes of "<layer_prefix><i>."; projections are
// named without ".weight" / ".bias". An empty name: the architecture has no such tensor.
struct TensorNames {
  std::string embedding = "model.embed_tokens.weight";
  std::string final_norm = "model.norm.weight";
  std::string lm_head = "lm_head.weight";
  std::string layer_prefix = "model.layers.";
  std::string attn_norm = "input_layernorm.weight";
  std::string q = "self_attn.q_proj", k = "self_attn.k_proj", v = "self_attn.v_proj";
  std::string qkv;  // fused q, k, v rows (Phi-3), in that order
  std::string o = "self_attn.o_proj";
  std::string q_norm, k_norm;        // per-head RMSNorm weights [head_dim]
  std::string post_attn_norm;        // norm of the attention output (sandwich norms)
  std::string ffn_norm = "post_attention_layernorm.weight";  // norm before the MLP
  std::string post_ffn_norm;         // norm of the MLP output (sandwich norms)
  std::string gate = "mlp.gate_proj", up = "mlp.up_proj";
  std::string gate_up;               // fused gate, up rows (Phi-3), in that order
  std::string down = "mlp.down_proj";

  std::string layer(int64_t index, const std::string& suffix) const {
    return layer_prefix + std::to_string(index) + "." + suffix;
  }
};

// Decoder features beyond the pre-norm Llama block (see docs/models.md).
struct DecoderFeatures {
  bool qk_norm = false;           // RMSNorm of each q and k head before rope (Qwen3, Gemma 3)
  bool sandwich_norms = false;    // post-attention and post-MLP norms (Gemma 3)
  bool norm_plus_one = false;     // RMSNorm scales by (1 + weight) (Gemma 3); folded at export
  bool embedding_scale = false;   // embeddings times sqrt(hidden_size) in the embedding dtype
};

// A config.json key an architecture reads. `fallback` is transformers' default (null: none,
// the key is then required unless the reader says otherwise).
struct ConfigField {
  std::string key;
  nlohmann::json fallback;
};

struct Architecture {
  std::string name;                      // "Qwen3ForCausalLM", or "llama2c"
  std::vector<std::string> model_types;  // config.json model_type values that name it
  TensorNames names;
  DecoderFeatures features;
  std::vector<ConfigField> fields;
  // Fills `config` from config.json: every field that changes the computation is either
  // honoured or refused with an error naming it and its value. Null for llama2c.
  Status (*read_config)(const ConfigReader& reader, ModelConfig& config) = nullptr;
};

// Every architecture in the table, HF ones first, in a stable order.
const std::vector<const Architecture*>& architectures();
// By name ("Qwen3ForCausalLM"); null when unknown.
const Architecture* find_architecture(const std::string& name);
// By config.json model_type ("qwen3"); null when unknown.
const Architecture* find_architecture_by_model_type(const std::string& model_type);

}  // namespace kestrel::exporter
