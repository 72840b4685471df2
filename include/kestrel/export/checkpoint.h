// Checkpoint importers: Hugging Face directories (config.json + safetensors, single file or
// sharded) and llama2.c legacy .bin files. Tensors are exposed under their Hugging Face names
// (those of the architecture table, kestrel/export/architecture.h) as read-only views into
// the memory-mapped files; nothing is copied.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/export/chat_config.h"

namespace kestrel::exporter {

struct RopeScaling {
  std::string type = "none";  // "none" | "linear" | "llama3" | "longrope"
  double factor = 1;
  double low_freq_factor = 1;   // llama3
  double high_freq_factor = 4;  // llama3
  int64_t original_max_position_embeddings = 0;  // llama3, longrope
  std::vector<double> short_factor, long_factor;  // longrope: rotary_dim / 2 each
  // longrope: multiplies cos and sin; sqrt(1 + ln(factor) / ln(original)) when not given.
  std::optional<double> attention_factor;
};

// What one decoder layer does differently from the others.
struct LayerSpec {
  bool sliding = false;     // attends to the last sliding_window positions only
  bool rope = true;         // false: no rotary embedding in this layer (SmolLM3 NoPE layers)
};

struct ModelConfig {
  std::string architecture;  // an entry of the architecture table, or "llama2c"
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000;          // full-attention layers
  RopeScaling rope_scaling;           // full-attention layers
  double local_rope_theta = 0;        // > 0: sliding layers use their own unscaled rope (Gemma 3)
  int64_t rotary_dim = 0;             // rotated dims per head (< head_dim: partial rotary)
  double attention_scale = 0;         // scores scale; 0: 1 / sqrt(head_dim)
  int64_t sliding_window = 0;         // window of the layers marked sliding
  std::vector<LayerSpec> layers;      // num_layers entries
  bool tie_word_embeddings = false;
  bool attention_bias = false;        // q/k/v projections carry a bias
  bool o_proj_bias = false;           // the output projection carries a bias
  bool mlp_bias = false;              // gate, up and down projections carry a bias
  std::string hidden_act = "silu";    // "silu" | "gelu" (erf) | "gelu_tanh"
  std::string rope_style = "half";    // "half" (Hugging Face) | "interleaved" (llama2.c)
  int64_t bos_id = -1;                // -1: none
  std::vector<int64_t> eos_ids;
};

struct CheckpointTensor {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;  // a view into the mapped file
};

enum class TokenizerFormat { kNone, kHfJson, kLlama2c };

class Checkpoint {
 public:
  struct Impl;  // defined by the importers
  explicit Checkpoint(std::shared_ptr<const Impl> impl);

  const ModelConfig& config() const;
  // Error (kNotFound / kUnsupported) names the tensor and the checkpoint file.
  Result<CheckpointTensor> tensor(const std::string& name) const;
  bool has_tensor(const std::string& name) const;
  std::vector<std::string> tensor_names() const;  // sorted
  // The file that holds a tensor ("" when absent): "model-00001-of-00002.safetensors".
  std::string tensor_file(const std::string& name) const;
  // Keeps the memory mappings alive: hold it next to any view of tensor bytes
  // (ConstantData::keepalive). Independent of this Checkpoint object's lifetime.
  std::shared_ptr<const void> keepalive() const;
  TokenizerFormat tokenizer_format() const;
  // tokenizer.json or tokenizer.bin exactly as read; empty when kNone.
  const std::vector<uint8_t>& tokenizer_bytes() const;
  // The path the checkpoint was loaded from.
  std::string source() const;
  // Chat template and end-of-turn tokens (empty for llama2.c and checkpoints without them).
  const ChatConfig& chat() const;

 private:
  std::shared_ptr<const Impl> impl_;
};

struct CheckpointOptions {
  std::string tokenizer_path;  // llama2.c tokenizer.bin (required for .bin checkpoints)
};

// `path` is a Hugging Face directory (config.json, model.safetensors or
// model.safetensors.index.json, optional generation_config.json and tokenizer.json) or a
// llama2.c .bin file. Validates every tensor the config requires (name, float dtype, shape).
Result<Checkpoint> load_checkpoint(const std::string& path, const CheckpointOptions& options = {});

// Parses a Hugging Face config.json (and optionally generation_config.json, whose
// bos/eos_token_id take precedence; its eos ids come first, the config's are appended).
// `source` labels errors. Finds the architecture in the table, which reads the fields it
// honours and refuses those it does not implement; checks dimensions against plausible bounds.
Result<ModelConfig> parse_hf_config(std::string_view config_json,
                                    std::string_view generation_config_json = {},
                                    const std::string& source = "config.json");

enum class TensorKind { kMatrix, kNorm, kBias };
struct TensorRequirement {
  std::string name;
  std::vector<int64_t> shape;
  TensorKind kind = TensorKind::kMatrix;
};
// Every tensor `config` needs, named by its architecture's table entry, in canonical order
// (embedding, layers, final norm, lm_head). Empty for an unknown architecture.
std::vector<TensorRequirement> required_tensors(const ModelConfig& config);
// "model.layers.3.self_attn.q_proj.weight" from (3, "self_attn.q_proj.weight"), with the
// layer prefix of `config`'s architecture.
std::string layer_tensor_name(const ModelConfig& config, int64_t layer, std::string_view suffix);

// The architectures load_checkpoint accepts from config.json.
std::vector<std::string> supported_hf_architectures();

// Converts a float tensor (f32/f16/bf16) to `target` (f32/f16/bf16), round-to-nearest-even.
Result<std::vector<uint8_t>> convert_tensor(const CheckpointTensor& tensor, DType target);

}  // namespace kestrel::exporter
