// Hugging Face checkpoint directories: config.json (+ generation_config.json, tokenizer.json)
// and model.safetensors or a sharded model.safetensors.index.json.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

using nlohmann::json;

// Reads typed keys from a JSON object; `source` names the file in errors.
class ConfigReader {
 public:
  ConfigReader(const json& object, const std::string& source) : j_(object), source_(source) {}

  bool has(const char* key) const {
    const auto it = j_.find(key);
    return it != j_.end() && !it->is_null();
  }

  Result<int64_t> integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (fallback) return *fallback;
      return make_error(ErrorCode::kInvalidArgument, "{}: missing key '{}'", source_, key);
    }
    if (!it->is_number_integer())
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be an integer, got {}",
                        source_, key, it->dump());
    return it->get<int64_t>();
  }

  Result<int64_t> positive(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    KESTREL_ASSIGN_OR_RETURN(int64_t value, integer(key, fallback));
    if (value <= 0)
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be positive, got {}",
                        source_, key, value);
    return value;
  }

  Result<double> number(const char* key, std::optional<double> fallback = std::nullopt) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) {
      if (fallback) return *fallback;
      return make_error(ErrorCode::kInvalidArgument, "{}: missing key '{}'", source_, key);
    }
    if (!it->is_number())
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a number, got {}",
                        source_, key, it->dump());
    return it->get<double>();
  }

  Result<bool> boolean(const char* key, bool fallback) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return fallback;
    if (!it->is_boolean())
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be true or false, got {}",
                        source_, key, it->dump());
    return it->get<bool>();
  }

  Result<std::string> string(const char* key, const std::string& fallback) const {
    const auto it = j_.find(key);
    if (it == j_.end() || it->is_null()) return fallback;
    if (!it->is_string())
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a string, got {}",
                        source_, key, it->dump());
    return it->get<std::string>();
  }

  // An integer or a list of integers; empty when absent or null.
  Result<std::vector<int64_t>> token_ids(const char* key) const {
    const auto it = j_.find(key);
    std::vector<int64_t> ids;
    if (it == j_.end() || it->is_null()) return ids;
    if (it->is_number_integer()) {
      ids.push_back(it->get<int64_t>());
    } else if (it->is_array()) {
      for (const auto& id : *it) {
        if (!id.is_number_integer())
          return make_error(ErrorCode::kInvalidArgument,
                            "{}: key '{}' must be an integer or a list of integers, got {}",
                            source_, key, it->dump());
        ids.push_back(id.get<int64_t>());
      }
    } else {
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: key '{}' must be an integer or a list of integers, got {}", source_,
                        key, it->dump());
    }
    for (int64_t id : ids)
      if (id < 0)
        return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' holds a negative id {}",
                          source_, key, id);
    return ids;
  }

  const std::string& source() const { return source_; }

 private:
  const json& j_;
  const std::string& source_;
};

Result<json> parse_json_object(std::string_view text, const std::string& source) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", source, e.what());
  }
  if (!j.is_object())
    return make_error(ErrorCode::kInvalidArgument, "{}: must hold a JSON object, got {}", source,
                      j.type_name());
  return j;
}

Result<RopeScaling> parse_rope_scaling(const json& j, const std::string& source) {
  RopeScaling scaling;
  if (j.is_null()) return scaling;
  if (!j.is_object())
    return make_error(ErrorCode::kInvalidArgument, "{}: rope_scaling must be an object, got {}",
                      source, j.dump());
  const std::string label = source + ": rope_scaling";
  ConfigReader r(j, label);
  KESTREL_ASSIGN_OR_RETURN(std::string type, r.string("rope_type", ""));
  if (type.empty()) {
    KESTREL_ASSIGN_OR_RETURN(type, r.string("type", "default"));
  }
  if (type == "default") return scaling;
  if (type == "llama3") {
    scaling.type = "llama3";
    KESTREL_ASSIGN_OR_RETURN(scaling.factor, r.number("factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.low_freq_factor, r.number("low_freq_factor", 1.0));
    KESTREL_ASSIGN_OR_RETURN(scaling.high_freq_factor, r.number("high_freq_factor", 4.0));
    KESTREL_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                             r.positive("original_max_position_embeddings", 8192));
    if (scaling.low_freq_factor <= 0 || scaling.high_freq_factor < scaling.low_freq_factor)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: needs 0 < low_freq_factor ({}) <= high_freq_factor ({})", label,
                        scaling.low_freq_factor, scaling.high_freq_factor);
  } else if (type == "linear") {
    scaling.type = "linear";
    KESTREL_ASSIGN_OR_RETURN(scaling.factor, r.number("factor"));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: type '{}' is not supported (supported: default, llama3, linear)", label,
                      type);
  }
  if (!(scaling.factor > 0))
    return make_error(ErrorCode::kInvalidArgument, "{}: factor must be positive, got {}", label,
                      scaling.factor);
  return scaling;
}

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

}  // namespace

Result<ModelConfig> parse_hf_config(std::string_view config_json,
                                    std::string_view generation_config_json,
                                    const std::string& source) {
  KESTREL_ASSIGN_OR_RETURN(json j, parse_json_object(config_json, source));
  ConfigReader r(j, source);
  ModelConfig c;

  const auto arch_it = j.find("architectures");
  if (arch_it != j.end() && !arch_it->is_null()) {
    if (!arch_it->is_array() || arch_it->empty() || !(*arch_it)[0].is_string())
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: key 'architectures' must be a non-empty list of strings, got {}",
                        source, arch_it->dump());
    c.architecture = (*arch_it)[0].get<std::string>();
  } else {
    KESTREL_ASSIGN_OR_RETURN(std::string model_type, r.string("model_type", ""));
    if (model_type == "llama") c.architecture = "LlamaForCausalLM";
    else if (model_type == "mistral") c.architecture = "MistralForCausalLM";
    else if (model_type == "qwen2") c.architecture = "Qwen2ForCausalLM";
    else
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: missing key 'architectures' (and model_type '{}' names no supported "
                        "architecture: {})",
                        source, model_type, join(supported_hf_architectures()));
  }
  const auto& supported = supported_hf_architectures();
  if (std::find(supported.begin(), supported.end(), c.architecture) == supported.end())
    return make_error(ErrorCode::kUnsupported, "{}: architecture '{}' is not supported (supported: {})",
                      source, c.architecture, join(supported));
  const bool is_llama = c.architecture == "LlamaForCausalLM";
  const bool is_mistral = c.architecture == "MistralForCausalLM";
  const bool is_qwen2 = c.architecture == "Qwen2ForCausalLM";

  KESTREL_ASSIGN_OR_RETURN(c.vocab_size, r.positive("vocab_size"));
  KESTREL_ASSIGN_OR_RETURN(c.hidden_size, r.positive("hidden_size"));
  KESTREL_ASSIGN_OR_RETURN(c.intermediate_size, r.positive("intermediate_size"));
  KESTREL_ASSIGN_OR_RETURN(c.num_layers, r.positive("num_hidden_layers"));
  KESTREL_ASSIGN_OR_RETURN(c.num_heads, r.positive("num_attention_heads"));
  KESTREL_ASSIGN_OR_RETURN(c.num_kv_heads, r.positive("num_key_value_heads", c.num_heads));
  if (r.has("head_dim")) {
    KESTREL_ASSIGN_OR_RETURN(c.head_dim, r.positive("head_dim"));
  } else {
    if (c.hidden_size % c.num_heads != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: hidden_size {} is not a multiple of num_attention_heads {} (and no "
                        "head_dim is given)",
                        source, c.hidden_size, c.num_heads);
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                      source, c.num_heads, c.num_kv_heads);
  if (c.head_dim % 2 != 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: head_dim {} must be even for rotary embeddings",
                      source, c.head_dim);
  const int64_t default_max_pos = is_qwen2 ? 32768 : is_mistral ? 131072 : 2048;
  KESTREL_ASSIGN_OR_RETURN(c.max_position_embeddings,
                           r.positive("max_position_embeddings", default_max_pos));
  KESTREL_ASSIGN_OR_RETURN(c.rms_norm_eps, r.number("rms_norm_eps", 1e-6));
  if (!(c.rms_norm_eps > 0))
    return make_error(ErrorCode::kInvalidArgument, "{}: rms_norm_eps must be positive, got {}",
                      source, c.rms_norm_eps);

  // Newer configs nest rope_theta and the scaling in rope_parameters.
  const json* rope_params = nullptr;
  if (const auto it = j.find("rope_parameters"); it != j.end() && it->is_object()) rope_params = &*it;
  double theta_fallback = 10000;
  if (rope_params != nullptr) {
    ConfigReader rp(*rope_params, source + ": rope_parameters");
    KESTREL_ASSIGN_OR_RETURN(theta_fallback, rp.number("rope_theta", 10000.0));
  }
  KESTREL_ASSIGN_OR_RETURN(c.rope_theta, r.number("rope_theta", theta_fallback));
  if (!(c.rope_theta > 0))
    return make_error(ErrorCode::kInvalidArgument, "{}: rope_theta must be positive, got {}",
                      source, c.rope_theta);
  if (const auto it = j.find("rope_scaling"); it != j.end() && !it->is_null()) {
    KESTREL_ASSIGN_OR_RETURN(c.rope_scaling, parse_rope_scaling(*it, source));
  } else if (rope_params != nullptr) {
    KESTREL_ASSIGN_OR_RETURN(c.rope_scaling, parse_rope_scaling(*rope_params, source));
  }

  KESTREL_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings", false));
  KESTREL_ASSIGN_OR_RETURN(c.hidden_act, r.string("hidden_act", "silu"));
  if (is_qwen2) {
    c.attention_bias = true;  // Qwen2 always has q/k/v biases
  } else if (is_llama) {
    KESTREL_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias", false));
  }
  KESTREL_ASSIGN_OR_RETURN(bool mlp_bias, r.boolean("mlp_bias", false));
  if (mlp_bias)
    return make_error(ErrorCode::kUnsupported, "{}: mlp_bias = true is not supported", source);
  c.rope_style = "half";

  if (is_mistral) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.integer("sliding_window", 0));
  } else if (is_qwen2) {
    KESTREL_ASSIGN_OR_RETURN(bool use_sliding, r.boolean("use_sliding_window", false));
    if (use_sliding) {
      KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.integer("sliding_window", 4096));
    }
  }
  if (c.sliding_window < 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: sliding_window must not be negative", source);

  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> bos, r.token_ids("bos_token_id"));
  KESTREL_ASSIGN_OR_RETURN(c.eos_ids, r.token_ids("eos_token_id"));
  if (!bos.empty()) c.bos_id = bos.front();

  if (!generation_config_json.empty()) {
    const std::string gen_source = "generation_config.json";
    KESTREL_ASSIGN_OR_RETURN(json g, parse_json_object(generation_config_json, gen_source));
    ConfigReader gr(g, gen_source);
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> gen_bos, gr.token_ids("bos_token_id"));
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> gen_eos, gr.token_ids("eos_token_id"));
    if (!gen_bos.empty()) c.bos_id = gen_bos.front();
    if (!gen_eos.empty()) {
      for (int64_t id : c.eos_ids)
        if (std::find(gen_eos.begin(), gen_eos.end(), id) == gen_eos.end()) gen_eos.push_back(id);
      c.eos_ids = std::move(gen_eos);
    }
  }
  if (c.bos_id >= c.vocab_size)
    return make_error(ErrorCode::kInvalidArgument, "{}: bos_token_id {} is outside the vocabulary ({})",
                      source, c.bos_id, c.vocab_size);
  for (int64_t id : c.eos_ids)
    if (id >= c.vocab_size)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: eos_token_id {} is outside the vocabulary ({})", source, id,
                        c.vocab_size);
  return c;
}

namespace import {

namespace fs = std::filesystem;

namespace {

std::string text_of(const std::vector<uint8_t>& bytes) {
  return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// Maps one safetensors file and adds its tensors (all of them, or only those in `wanted`).
Status add_safetensors_file(Checkpoint::Impl& impl, MappingSet& mappings, const fs::path& dir,
                            const std::string& file_name, const std::set<std::string>* wanted) {
  KESTREL_ASSIGN_OR_RETURN(auto mapped, MappedFile::open((dir / file_name).string()));
  KESTREL_ASSIGN_OR_RETURN(std::vector<TensorEntry> entries,
                           parse_safetensors(mapped->bytes(), file_name));
  std::set<std::string> found;
  for (TensorEntry& entry : entries) {
    if (wanted != nullptr && wanted->count(entry.name) == 0) continue;
    found.insert(entry.name);
    const auto [it, inserted] = impl.tensors.emplace(entry.name, entry);
    if (!inserted)
      return make_error(ErrorCode::kCorrupt, "tensor '{}' is stored twice: in '{}' and in '{}'",
                        entry.name, it->second.file, file_name);
  }
  if (wanted != nullptr) {
    for (const std::string& name : *wanted)
      if (found.count(name) == 0)
        return make_error(ErrorCode::kCorrupt,
                          "model.safetensors.index.json maps tensor '{}' to '{}', which does not "
                          "contain it",
                          name, file_name);
  }
  mappings.files.push_back(std::move(mapped));
  return ok_status();
}

Status load_sharded(Checkpoint::Impl& impl, MappingSet& mappings, const fs::path& dir) {
  const std::string index_name = "model.safetensors.index.json";
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bytes((dir / index_name).string()));
  KESTREL_ASSIGN_OR_RETURN(json index, parse_json_object(text_of(bytes), index_name));
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object())
    return make_error(ErrorCode::kCorrupt, "{}: missing object 'weight_map'", index_name);
  std::map<std::string, std::set<std::string>> shards;  // file -> tensors, in file order
  for (const auto& [name, file] : map_it->items()) {
    if (!file.is_string())
      return make_error(ErrorCode::kCorrupt, "{}: weight_map entry '{}' must be a file name, got {}",
                        index_name, name, file.dump());
    const std::string file_name = file.get<std::string>();
    if (file_name.empty() || file_name.find('/') != std::string::npos ||
        file_name.find('\\') != std::string::npos || file_name == "." || file_name == "..")
      return make_error(ErrorCode::kCorrupt,
                        "{}: weight_map entry '{}' names '{}', which is not a plain file name",
                        index_name, name, file_name);
    shards[file_name].insert(name);
  }
  if (shards.empty())
    return make_error(ErrorCode::kCorrupt, "{}: weight_map is empty", index_name);
  for (const auto& [file_name, names] : shards)
    KESTREL_RETURN_IF_ERROR(add_safetensors_file(impl, mappings, dir, file_name, &names));
  return ok_status();
}

}  // namespace

Result<Checkpoint> load_hf_checkpoint(const std::string& dir_string, const CheckpointOptions& options) {
  const fs::path dir(dir_string);
  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->source = dir_string;
  auto mappings = std::make_shared<MappingSet>();
  const auto context = [&](const Error& e) { return e.with_context("checkpoint '" + dir_string + "'"); };

  std::error_code ec;
  const fs::path config_path = dir / "config.json";
  if (!fs::is_regular_file(config_path, ec))
    return make_error(ErrorCode::kNotFound,
                      "checkpoint '{}' has no config.json (a Hugging Face checkpoint directory "
                      "needs one)",
                      dir_string);
  auto config_bytes = read_file_bytes(config_path.string());
  if (!config_bytes.ok()) return context(config_bytes.error());
  std::string generation;
  const fs::path generation_path = dir / "generation_config.json";
  if (fs::is_regular_file(generation_path, ec)) {
    auto bytes = read_file_bytes(generation_path.string());
    if (!bytes.ok()) return context(bytes.error());
    generation = text_of(*bytes);
    if (generation.empty()) generation = " ";  // present but empty: reported as invalid JSON
  }
  auto config = parse_hf_config(text_of(*config_bytes), generation, "config.json");
  if (!config.ok()) return context(config.error());
  impl->config = std::move(config).value();

  if (!options.tokenizer_path.empty()) {
    // An explicit tokenizer replaces the directory's own tokenizer.json.
    const std::string& path = options.tokenizer_path;
    auto bytes = read_file_bytes(path);
    if (!bytes.ok()) return context(bytes.error());
    const bool is_json = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
    if (!is_json)
      KESTREL_RETURN_IF_ERROR(validate_llama2c_tokenizer(*bytes, impl->config.vocab_size, path));
    impl->tokenizer_bytes = std::move(bytes).value();
    impl->tokenizer_format = is_json ? TokenizerFormat::kHfJson : TokenizerFormat::kLlama2c;
  } else if (const fs::path tokenizer_path = dir / "tokenizer.json";
             fs::is_regular_file(tokenizer_path, ec)) {
    auto bytes = read_file_bytes(tokenizer_path.string());
    if (!bytes.ok()) return context(bytes.error());
    impl->tokenizer_bytes = std::move(bytes).value();
    impl->tokenizer_format = TokenizerFormat::kHfJson;
  }

  if (impl->tokenizer_format == TokenizerFormat::kHfJson) {
    auto chat = read_chat_config(dir_string, impl->tokenizer_bytes, impl->config.eos_ids, impl->config.vocab_size);
    if (!chat.ok()) return context(chat.error());
    impl->chat = std::move(chat).value();
  }

  Status weights;
  if (fs::exists(dir / "model.safetensors", ec)) {
    weights = add_safetensors_file(*impl, *mappings, dir, "model.safetensors", nullptr);
  } else if (fs::exists(dir / "model.safetensors.index.json", ec)) {
    weights = load_sharded(*impl, *mappings, dir);
  } else {
    const bool has_bin = fs::exists(dir / "pytorch_model.bin", ec) ||
                         fs::exists(dir / "pytorch_model.bin.index.json", ec);
    return make_error(ErrorCode::kNotFound,
                      "checkpoint '{}' has neither model.safetensors nor "
                      "model.safetensors.index.json{}",
                      dir_string,
                      has_bin ? " (pytorch_model.bin is not supported: convert it to safetensors)" : "");
  }
  if (!weights.ok()) return context(weights.error());
  impl->mappings = std::move(mappings);
  KESTREL_RETURN_IF_ERROR(validate_required_tensors(*impl));
  return Checkpoint(std::move(impl));
}

}  // namespace import
}  // namespace kestrel::exporter
