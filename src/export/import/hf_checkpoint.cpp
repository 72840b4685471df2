// Hugging Face checkpoint directories: config.json (+ generation_config.json, tokenizer.json)
// and model.safetensors or a sharded model.safetensors.index.json.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

using nlohmann::json;

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
  KESTREL_RETURN_IF_ERROR(check_layer_count(*impl, "config.json"));
  KESTREL_RETURN_IF_ERROR(validate_required_tensors(*impl));
  return Checkpoint(std::move(impl));
}

}  // namespace import
}  // namespace kestrel::exporter
