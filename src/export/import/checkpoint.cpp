#include "kestrel/export/checkpoint.h"

#include <cstring>
#include <filesystem>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/tensor.h"
#include "kestrel/export/architecture.h"

namespace kestrel::exporter {

Checkpoint::Checkpoint(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

const ModelConfig& Checkpoint::config() const { return impl_->config; }

Result<CheckpointTensor> Checkpoint::tensor(const std::string& name) const {
  const auto it = impl_->tensors.find(name);
  if (it == impl_->tensors.end())
    return make_error(ErrorCode::kNotFound, "tensor '{}' not found in checkpoint '{}'", name,
                      impl_->source);
  const import::TensorEntry& entry = it->second;
  if (!entry.dtype)
    return make_error(ErrorCode::kUnsupported,
                      "{}: tensor '{}' has dtype {}, which is not supported (F32, F16, BF16, I32, "
                      "I64, U8)",
                      entry.file, name, entry.raw_dtype);
  return CheckpointTensor{entry.name, *entry.dtype, entry.shape, entry.bytes};
}

bool Checkpoint::has_tensor(const std::string& name) const {
  return impl_->tensors.count(name) != 0;
}

std::vector<std::string> Checkpoint::tensor_names() const {
  std::vector<std::string> names;
  names.reserve(impl_->tensors.size());
  for (const auto& [name, entry] : impl_->tensors) names.push_back(name);
  return names;
}

std::string Checkpoint::tensor_file(const std::string& name) const {
  const auto it = impl_->tensors.find(name);
  return it == impl_->tensors.end() ? std::string() : it->second.file;
}

std::shared_ptr<const void> Checkpoint::keepalive() const { return impl_->mappings; }

TokenizerFormat Checkpoint::tokenizer_format() const { return impl_->tokenizer_format; }

const std::vector<uint8_t>& Checkpoint::tokenizer_bytes() const { return impl_->tokenizer_bytes; }

std::string Checkpoint::source() const { return impl_->source; }

const ChatConfig& Checkpoint::chat() const { return impl_->chat; }

std::string layer_tensor_name(const ModelConfig& config, int64_t layer, std::string_view suffix) {
  const Architecture* architecture = find_architecture(config.architecture);
  const TensorNames names = architecture != nullptr ? architecture->names : TensorNames{};
  return names.layer(layer, std::string(suffix));
}

std::vector<TensorRequirement> required_tensors(const ModelConfig& c) {
  const Architecture* architecture = find_architecture(c.architecture);
  if (architecture == nullptr) return {};
  const TensorNames& n = architecture->names;
  const DecoderFeatures& f = architecture->features;
  const int64_t D = c.hidden_size, F = c.intermediate_size, Dh = c.head_dim;
  const int64_t q_dim = c.num_heads * Dh, kv_dim = c.num_kv_heads * Dh;
  std::vector<TensorRequirement> out;
  const auto add = [&](std::string name, std::vector<int64_t> shape, TensorKind kind) {
    out.push_back({std::move(name), std::move(shape), kind});
  };
  // A projection: weight [rows, cols], and a bias [rows] when it has one.
  const auto projection = [&](int64_t layer, const std::string& name, int64_t rows, int64_t cols, bool bias) {
    add(n.layer(layer, name + ".weight"), {rows, cols}, TensorKind::kMatrix);
    if (bias) add(n.layer(layer, name + ".bias"), {rows}, TensorKind::kBias);
  };
  add(n.embedding, {c.vocab_size, D}, TensorKind::kMatrix);
  for (int64_t i = 0; i < c.num_layers; ++i) {
    add(n.layer(i, n.attn_norm), {D}, TensorKind::kNorm);
    if (!n.qkv.empty()) {
      projection(i, n.qkv, q_dim + 2 * kv_dim, D, c.attention_bias);
    } else {
      add(n.layer(i, n.q + ".weight"), {q_dim, D}, TensorKind::kMatrix);
      add(n.layer(i, n.k + ".weight"), {kv_dim, D}, TensorKind::kMatrix);
      add(n.layer(i, n.v + ".weight"), {kv_dim, D}, TensorKind::kMatrix);
      if (c.attention_bias) {
        add(n.layer(i, n.q + ".bias"), {q_dim}, TensorKind::kBias);
        add(n.layer(i, n.k + ".bias"), {kv_dim}, TensorKind::kBias);
        add(n.layer(i, n.v + ".bias"), {kv_dim}, TensorKind::kBias);
      }
    }
    if (f.qk_norm) {
      add(n.layer(i, n.q_norm), {Dh}, TensorKind::kNorm);
      add(n.layer(i, n.k_norm), {Dh}, TensorKind::kNorm);
    }
    projection(i, n.o, D, q_dim, c.o_proj_bias);
    if (f.sandwich_norms) add(n.layer(i, n.post_attn_norm), {D}, TensorKind::kNorm);
    add(n.layer(i, n.ffn_norm), {D}, TensorKind::kNorm);
    if (!n.gate_up.empty()) {
      projection(i, n.gate_up, 2 * F, D, c.mlp_bias);
    } else {
      projection(i, n.gate, F, D, c.mlp_bias);
      projection(i, n.up, F, D, c.mlp_bias);
    }
    projection(i, n.down, D, F, c.mlp_bias);
    if (f.sandwich_norms) add(n.layer(i, n.post_ffn_norm), {D}, TensorKind::kNorm);
  }
  add(n.final_norm, {D}, TensorKind::kNorm);
  if (!c.tie_word_embeddings) add(n.lm_head, {c.vocab_size, D}, TensorKind::kMatrix);
  return out;
}

namespace import {

namespace {
Status check_weight(const Checkpoint::Impl& impl, const TensorEntry& entry,
                    const std::vector<int64_t>& expected) {
  if (!entry.dtype || !dtype_is_float(*entry.dtype))
    return make_error(ErrorCode::kUnsupported,
                      "{}: tensor '{}' has dtype {}; weights must be F32, F16 or BF16", entry.file,
                      entry.name, entry.raw_dtype);
  if (entry.shape != expected)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: tensor '{}' has shape {}, but the config needs {}", entry.file,
                      entry.name, dims_string(entry.shape), dims_string(expected));
  return ok_status();
}
}  // namespace

Status validate_required_tensors(const Checkpoint::Impl& impl) {
  for (const TensorRequirement& req : required_tensors(impl.config)) {
    const auto it = impl.tensors.find(req.name);
    if (it == impl.tensors.end())
      return make_error(ErrorCode::kNotFound,
                        "checkpoint '{}' is missing tensor '{}' (expected shape {})", impl.source,
                        req.name, dims_string(req.shape));
    KESTREL_RETURN_IF_ERROR(check_weight(impl, it->second, req.shape));
  }
  const Architecture* architecture = find_architecture(impl.config.architecture);
  if (architecture == nullptr)
    return make_error(ErrorCode::kInternal, "checkpoint '{}': architecture '{}' is not in the table", impl.source,
                      impl.config.architecture);
  if (impl.config.tie_word_embeddings) {
    // Some tied checkpoints still store lm_head.weight; it must at least be well formed.
    const auto it = impl.tensors.find(architecture->names.lm_head);
    if (it != impl.tensors.end())
      KESTREL_RETURN_IF_ERROR(
          check_weight(impl, it->second, {impl.config.vocab_size, impl.config.hidden_size}));
  }
  return ok_status();
}

}  // namespace import

Result<Checkpoint> load_checkpoint(const std::string& path, const CheckpointOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    return make_error(ErrorCode::kNotFound, "checkpoint '{}' does not exist", path);
  if (fs::is_directory(status)) return import::load_hf_checkpoint(path, options);
  if (!fs::is_regular_file(status))
    return make_error(ErrorCode::kInvalidArgument,
                      "checkpoint '{}' is neither a directory nor a regular file", path);
  const std::string file_name = fs::path(path).filename().string();
  const auto ends_with = [&](std::string_view suffix) {
    return file_name.size() >= suffix.size() &&
           file_name.compare(file_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  // A file of a Hugging Face checkpoint stands for its directory.
  if (file_name == "config.json" || ends_with(".safetensors") ||
      ends_with(".safetensors.index.json")) {
    std::string dir = fs::path(path).parent_path().string();
    return import::load_hf_checkpoint(dir.empty() ? "." : dir, options);
  }
  return import::load_llama2c_checkpoint(path, options);
}

Result<std::vector<uint8_t>> convert_tensor(const CheckpointTensor& tensor, DType target) {
  if (!dtype_is_float(tensor.dtype))
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor '{}': cannot convert dtype {}, only f32, f16 and bf16", tensor.name,
                      dtype_name(tensor.dtype));
  if (!dtype_is_float(target))
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor '{}': cannot convert to dtype {}, only f32, f16 and bf16",
                      tensor.name, dtype_name(target));
  uint64_t numel = 1;
  for (int64_t d : tensor.shape) {
    if (d < 0 || __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel))
      return make_error(ErrorCode::kInvalidArgument, "tensor '{}': invalid shape {}", tensor.name,
                        dims_string(tensor.shape));
  }
  const size_t in_size = dtype_element_size(tensor.dtype);
  if (tensor.bytes.size() / in_size != numel || tensor.bytes.size() % in_size != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "tensor '{}': {} bytes do not match dtype {} and shape {}", tensor.name,
                      tensor.bytes.size(), dtype_name(tensor.dtype), dims_string(tensor.shape));
  if (target == tensor.dtype) return std::vector<uint8_t>(tensor.bytes.begin(), tensor.bytes.end());

  const size_t out_size = dtype_element_size(target);
  std::vector<uint8_t> out(numel * out_size);
  const uint8_t* src = tensor.bytes.data();
  uint8_t* dst = out.data();
  for (uint64_t i = 0; i < numel; ++i) {
    float value;
    if (tensor.dtype == DType::kF32) {
      std::memcpy(&value, src + i * 4, 4);
    } else {
      uint16_t half;
      std::memcpy(&half, src + i * 2, 2);
      value = tensor.dtype == DType::kF16 ? f16_to_f32(half) : bf16_to_f32(half);
    }
    if (target == DType::kF32) {
      std::memcpy(dst + i * 4, &value, 4);
    } else {
      const uint16_t half = target == DType::kF16 ? f32_to_f16(value) : f32_to_bf16(value);
      std::memcpy(dst + i * 2, &half, 2);
    }
  }
  return out;
}

}  // namespace kestrel::exporter
