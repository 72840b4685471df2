// config.json (+ generation_config.json) -> ModelConfig through the architecture table.
#include <algorithm>

#include "export/arch/config_reader.h"
#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"
#include "kestrel/export/architecture.h"

namespace kestrel::exporter {

using nlohmann::json;

namespace {

Result<const Architecture*> find_config_architecture(const json& j, const ConfigReader& r) {
  std::string name;
  if (const json* list = r.find("architectures")) {
    if (!list->is_array() || list->empty() || !(*list)[0].is_string())
      return make_error(ErrorCode::kInvalidArgument, "{}: key 'architectures' must be a non-empty list of strings, got {}",
                        r.source(), list->dump());
    name = (*list)[0].get<std::string>();
  } else {
    KESTREL_ASSIGN_OR_RETURN(std::string model_type, r.string("model_type", ""));
    const Architecture* found = find_architecture_by_model_type(model_type);
    if (found == nullptr)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: missing key 'architectures' (and model_type '{}' names no supported architecture: {})",
                        r.source(), model_type, fmt::join(supported_hf_architectures(), ", "));
    return found;
  }
  if (name == "Gemma3ForConditionalGeneration")
    return make_error(ErrorCode::kUnsupported,
                      "{}: architecture 'Gemma3ForConditionalGeneration' is a multimodal (vision + text) Gemma 3 "
                      "checkpoint; Kestrel exports text-only Gemma3ForCausalLM checkpoints (Gemma 3 270M, 1B)",
                      r.source());
  const Architecture* found = find_architecture(name);
  if (found == nullptr || found->read_config == nullptr)
    return make_error(ErrorCode::kUnsupported, "{}: architecture '{}' is not supported (supported: {})", r.source(),
                      name, fmt::join(supported_hf_architectures(), ", "));
  return found;
}

}  // namespace

std::vector<std::string> supported_hf_architectures() {
  std::vector<std::string> names;
  for (const Architecture* a : architectures())
    if (a->read_config != nullptr) names.push_back(a->name);
  return names;
}

Result<ModelConfig> parse_hf_config(std::string_view config_json, std::string_view generation_config_json,
                                    const std::string& source) {
  KESTREL_ASSIGN_OR_RETURN(json j, import::parse_json_object(config_json, source));
  const ConfigReader plain(j, source);
  KESTREL_ASSIGN_OR_RETURN(const Architecture* architecture, find_config_architecture(j, plain));
  // Quantized checkpoints (GPTQ, AWQ, bitsandbytes, ...) store other tensors than the table's.
  if (plain.has("quantization_config"))
    return plain.unsupported("quantization_config",
                             "quantized checkpoints are not supported; export the unquantized (f32/f16/bf16) weights");
  ModelConfig c;
  c.architecture = architecture->name;
  c.rope_style = "half";
  KESTREL_RETURN_IF_ERROR(architecture->read_config(ConfigReader(j, source, architecture), c));
  // Keys the architecture does not read: transformers' forward pass does not use them either
  // (dropouts, initializer_range, use_cache, ...), listed at debug level for the curious.
  std::vector<std::string> unread;
  for (const auto& item : j.items()) {
    const std::string& key = item.key();
    const bool declared = std::any_of(architecture->fields.begin(), architecture->fields.end(),
                                      [&](const ConfigField& field) { return field.key == key; });
    if (!declared && key != "architectures" && key != "model_type" && key != "bos_token_id" && key != "eos_token_id")
      unread.push_back(key);
  }
  if (!unread.empty())
    log(LogLevel::kDebug, "{}: keys {} reads nothing from: {}", source, c.architecture, fmt::join(unread, ", "));

  // Token ids: generation_config.json's take precedence (its eos ids first, then the config's).
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> bos, plain.token_ids("bos_token_id"));
  KESTREL_ASSIGN_OR_RETURN(c.eos_ids, plain.token_ids("eos_token_id"));
  std::string bos_source = source;
  std::vector<std::string> eos_sources(c.eos_ids.size(), source);
  if (!bos.empty()) c.bos_id = bos.front();
  if (!generation_config_json.empty()) {
    const std::string gen_source = "generation_config.json";
    KESTREL_ASSIGN_OR_RETURN(json g, import::parse_json_object(generation_config_json, gen_source));
    const ConfigReader gr(g, gen_source);
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> gen_bos, gr.token_ids("bos_token_id"));
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> gen_eos, gr.token_ids("eos_token_id"));
    if (!gen_bos.empty()) {
      c.bos_id = gen_bos.front();
      bos_source = gen_source;
    }
    if (!gen_eos.empty()) {
      std::vector<std::string> sources(gen_eos.size(), gen_source);
      for (size_t i = 0; i < c.eos_ids.size(); ++i)
        if (std::find(gen_eos.begin(), gen_eos.end(), c.eos_ids[i]) == gen_eos.end()) {
          gen_eos.push_back(c.eos_ids[i]);
          sources.push_back(eos_sources[i]);
        }
      c.eos_ids = std::move(gen_eos);
      eos_sources = std::move(sources);
    }
  }
  if (c.bos_id >= c.vocab_size)
    return make_error(ErrorCode::kInvalidArgument, "{}: bos_token_id {} is outside the vocabulary ({})", bos_source,
                      c.bos_id, c.vocab_size);
  for (size_t i = 0; i < c.eos_ids.size(); ++i)
    if (c.eos_ids[i] >= c.vocab_size)
      return make_error(ErrorCode::kInvalidArgument, "{}: eos_token_id {} is outside the vocabulary ({})",
                        eos_sources[i], c.eos_ids[i], c.vocab_size);
  return c;
}

namespace import {

Result<json> parse_json_object(std::string_view text, const std::string& source) {
  KESTREL_ASSIGN_OR_RETURN(json j, parse_json_unique_keys(text, source));
  if (!j.is_object())
    return make_error(ErrorCode::kInvalidArgument, "{}: must hold a JSON object, got {}", source, j.type_name());
  return j;
}

Status check_layer_count(const Checkpoint::Impl& impl, const std::string& config_source) {
  const Architecture* architecture = find_architecture(impl.config.architecture);
  if (architecture == nullptr) return ok_status();
  const std::string& prefix = architecture->names.layer_prefix;
  int64_t present = 0;
  for (const auto& [name, entry] : impl.tensors) {
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    int64_t index = 0;
    size_t i = prefix.size();
    for (; i < name.size() && i < prefix.size() + 9 && name[i] >= '0' && name[i] <= '9'; ++i)
      index = index * 10 + (name[i] - '0');
    if (i > prefix.size() && i < name.size() && name[i] == '.') present = std::max(present, index + 1);
  }
  if (impl.config.num_layers > present)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: num_hidden_layers = {}, but checkpoint '{}' holds tensors for {} layer{} ({}N.*)",
                      config_source, impl.config.num_layers, impl.source, present, present == 1 ? "" : "s", prefix);
  return ok_status();
}

}  // namespace import
}  // namespace kestrel::exporter
