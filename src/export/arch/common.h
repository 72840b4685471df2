// Config reading shared by the architecture files: dimensions with plausibility bounds, rotary
// embedding parameters (flat rope_theta / rope_scaling or the nested rope_parameters form),
// activations, per-layer attention kinds.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "export/arch/config_reader.h"
#include "kestrel/export/checkpoint.h"

namespace kestrel::exporter::arch {

// Upper bounds a real checkpoint stays far below; past them a config is refused before anything
// proportional to the value is allocated.
inline constexpr int64_t kMaxLayers = 1024;
inline constexpr int64_t kMaxHidden = int64_t{1} << 17;
inline constexpr int64_t kMaxIntermediate = int64_t{1} << 20;
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;
inline constexpr int64_t kMaxHeads = 4096;
inline constexpr int64_t kMaxHeadDim = 4096;
inline constexpr int64_t kMaxPositions = int64_t{1} << 26;

// The fields every Hugging Face decoder declares, with the given defaults (null: required;
// for head_dim: hidden_size / num_attention_heads).
struct CommonDefaults {
  nlohmann::json vocab_size, max_position_embeddings, rms_norm_eps, rope_theta, tie_word_embeddings;
  nlohmann::json head_dim = nullptr;
  std::string activation_key = "hidden_act";
  nlohmann::json activation = "silu";
};
std::vector<ConfigField> common_fields(const CommonDefaults& defaults);

// vocab_size, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads,
// num_key_value_heads (default: the heads), head_dim, max_position_embeddings, rms_norm_eps,
// tie_word_embeddings; fills `layers` with defaults.
Status read_dimensions(const ConfigReader& reader, ModelConfig& config);

struct RopeOptions {
  bool partial_rotary = false;  // partial_rotary_factor is honoured (else refused unless 1)
  // The object holding the rope keys when it is not the config itself (Gemma 3's per layer
  // type rope_parameters); null: rope_theta / rope_scaling / rope_parameters of the config.
  const nlohmann::json* parameters = nullptr;
};
// rope_theta and rope_scaling (or rope_parameters): types default, linear, llama3, longrope;
// every other type, and every key a type does not use, is refused. Sets rotary_dim.
Status read_rope(const ConfigReader& reader, ModelConfig& config, const RopeOptions& options = {});

// One rope_scaling / rope_parameters object. `original_fallback` is the config's
// original_max_position_embeddings (longrope), used when the object has none.
Result<RopeScaling> parse_rope_scaling(const nlohmann::json& object, const std::string& source,
                                       int64_t max_position_embeddings, int64_t original_fallback);

// hidden_act (or hidden_activation): silu/swish, gelu (erf), gelu_new / gelu_pytorch_tanh
// (tanh approximation); anything else is refused.
Status read_activation(const ConfigReader& reader, const std::string& key, ModelConfig& config);

// read_dimensions, read_rope and read_activation (of the activation key in common_fields).
Status read_decoder(const ConfigReader& reader, ModelConfig& config, const RopeOptions& rope = {});

// attention_bias: a bias on q, k, v and o (Llama, Qwen3, Gemma 3, SmolLM3).
Status read_attention_bias(const ConfigReader& reader, ModelConfig& config);

// sliding_window for every layer (Mistral, Phi-3): an explicit null turns it off, an absent key
// takes the declared default.
Status read_uniform_sliding_window(const ConfigReader& reader, ModelConfig& config);

// layer_types when given ("full_attention" / "sliding_attention", one per layer), else
// `default_sliding(i)`; sliding layers need a positive sliding_window in `config`.
Status read_layer_types(const ConfigReader& reader, ModelConfig& config,
                        const std::function<bool(int64_t)>& default_sliding);

// Qwen2 / Qwen3: use_sliding_window, sliding_window, max_window_layers, layer_types.
std::vector<ConfigField> qwen_sliding_fields();
Status read_qwen_sliding_window(const ConfigReader& reader, ModelConfig& config);

}  // namespace kestrel::exporter::arch
