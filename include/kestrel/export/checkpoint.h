// Checkpoint importers: Hugging Face directories (config.json + safetensors, single file or
// sharded) and llama2.c legacy .bin files. Tensors are exposed under canonical Hugging Face
// names as read-only views into the memory-mapped files; nothing is copied.
//
// Canonical names:
//   model.embed_tokens.weight                          [vocab, hidden]
//   model.layers.{i}.self_attn.q_proj.weight           [heads * head_dim, hidden]
//   model.layers.{i}.self_attn.{k,v}_proj.weight       [kv_heads * head_dim, hidden]
//   model.layers.{i}.self_attn.o_proj.weight           [hidden, heads * head_dim]
//   model.layers.{i}.self_attn.{q,k,v}_proj.bias       (attention_bias only, e.g. Qwen2)
//   model.layers.{i}.mlp.{gate,up}_proj.weight         [intermediate, hidden]
//   model.layers.{i}.mlp.down_proj.weight              [hidden, intermediate]
//   model.layers.{i}.input_layernorm.weight            [hidden]
//   model.layers.{i}.post_attention_layernorm.weight   [hidden]
//   model.norm.weight                                  [hidden]
//   lm_head.weight                                     [vocab, hidden] (absent when tied)
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/export/chat_config.h"

namespace kestrel::exporter {

struct RopeScaling {
  std::string type = "none";  // "none" | "llama3" | "linear"
  double factor = 1;
  double low_freq_factor = 1;
  double high_freq_factor = 4;
  int64_t original_max_position_embeddings = 8192;
};

struct ModelConfig {
  // LlamaForCausalLM | MistralForCausalLM | Qwen2ForCausalLM | llama2c
  std::string architecture;
  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  double rope_theta = 10000;
  RopeScaling rope_scaling;
  bool tie_word_embeddings = false;
  bool attention_bias = false;      // q/k/v projections carry a bias (Qwen2)
  std::string hidden_act = "silu";
  std::string rope_style = "half";  // "half" (Hugging Face) | "interleaved" (llama2.c)
  int64_t bos_id = -1;              // -1: none
  std::vector<int64_t> eos_ids;
  int64_t sliding_window = 0;       // 0: full attention
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
// `source` labels errors. Checks the architecture and the dimensions for consistency.
Result<ModelConfig> parse_hf_config(std::string_view config_json,
                                    std::string_view generation_config_json = {},
                                    const std::string& source = "config.json");

struct TensorRequirement {
  std::string name;
  std::vector<int64_t> shape;
};
// Every tensor `config` needs, in canonical order (embedding, layers, final norm, lm_head).
std::vector<TensorRequirement> required_tensors(const ModelConfig& config);
// "model.layers.3.self_attn.q_proj.weight" from (3, "self_attn.q_proj.weight").
std::string layer_tensor_name(int64_t layer, std::string_view suffix);

// The architectures load_checkpoint accepts from config.json.
const std::vector<std::string>& supported_hf_architectures();

// Converts a float tensor (f32/f16/bf16) to `target` (f32/f16/bf16), round-to-nearest-even.
Result<std::vector<uint8_t>> convert_tensor(const CheckpointTensor& tensor, DType target);

}  // namespace kestrel::exporter
