// Reads a checkpoint's chat template and chat tokens (tokenizer_config.json,
// chat_template.jinja / chat_template.json, special_tokens_map.json) for the exporter.
#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/export/chat_config.h"
#include "kestrel/jinja/template.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::exporter {

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The text of `dir/name`, or nullopt when there is no such file.
Result<std::optional<std::string>> optional_text(const fs::path& dir, const std::string& name) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / name, ec)) return std::optional<std::string>();
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, import::read_file_bytes((dir / name).string()));
  return std::optional<std::string>(std::string(bytes.begin(), bytes.end()));
}

Result<json> object_from(const std::string& text, const std::string& file) {
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON", file);
  if (!parsed.is_object())
    return make_error(ErrorCode::kInvalidArgument, "{}: must hold a JSON object, got {}", file, parsed.type_name());
  return parsed;
}

// A special token as tokenizer_config.json writes it: a string, {"content": ...} or null.
Result<std::string> token_text(const json& object, const char* key, const std::string& file) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
    return (*it)["content"].get<std::string>();
  return make_error(ErrorCode::kInvalidArgument, "{}: '{}' must be a string or an object with \"content\", got {}",
                    file, key, it->dump());
}

// tokenizer_config.json's chat_template: a string, or a list of {"name", "template"}.
Status read_inline_templates(const json& config, const std::string& file, ChatConfig& chat) {
  const auto it = config.find("chat_template");
  if (it == config.end() || it->is_null()) return ok_status();
  if (it->is_string()) {
    chat.chat_template = it->get<std::string>();
    chat.template_file = file;
    return ok_status();
  }
  if (!it->is_array())
    return make_error(ErrorCode::kInvalidArgument, "{}: chat_template must be a string or a list of named templates",
                      file);
  for (const json& entry : *it) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() || !entry.contains("template") ||
        !entry["template"].is_string())
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: each chat_template entry must be {{\"name\": string, \"template\": string}}, got {}", file,
                        entry.dump());
    const std::string name = entry["name"].get<std::string>();
    if (name == "default") {
      chat.chat_template = entry["template"].get<std::string>();
      chat.template_file = file + " (template 'default')";
    } else {
      chat.named_templates[name] = entry["template"].get<std::string>();
    }
  }
  return ok_status();
}

// The id of a token text: an added token's content, else a vocabulary entry.
std::optional<int64_t> token_id(const json& tokenizer, const std::string& text) {
  if (const auto added = tokenizer.find("added_tokens"); added != tokenizer.end() && added->is_array())
    for (const json& token : *added)
      if (token.is_object() && token.value("content", "") == text && token.contains("id") &&
          token["id"].is_number_integer())
        return token["id"].get<int64_t>();
  if (const auto model = tokenizer.find("model"); model != tokenizer.end() && model->is_object())
    if (const auto vocab = model->find("vocab"); vocab != model->end() && vocab->is_object())
      if (const auto entry = vocab->find(text); entry != vocab->end() && entry->is_number_integer())
        return entry->get<int64_t>();
  return std::nullopt;
}

Status check_template(const std::string& source, const std::string& where) {
  const auto parsed = jinja::Template::parse(source);
  if (!parsed.ok())
    return make_error(ErrorCode::kInvalidArgument, "{}: the chat template does not parse: {}", where,
                      parsed.error().message());
  return ok_status();
}

}  // namespace

Result<ChatConfig> read_chat_config(const std::string& dir_string, std::span<const uint8_t> tokenizer_json,
                                    const std::vector<int64_t>& eos_ids, int64_t vocab_size) {
  const fs::path dir(dir_string);
  ChatConfig chat;
  json tokenizer_config = json::object();
  const std::string config_file = "tokenizer_config.json";
  KESTREL_ASSIGN_OR_RETURN(auto config_text, optional_text(dir, config_file));
  if (config_text) {
    KESTREL_ASSIGN_OR_RETURN(tokenizer_config, object_from(*config_text, config_file));
    KESTREL_RETURN_IF_ERROR(read_inline_templates(tokenizer_config, config_file, chat));
    KESTREL_ASSIGN_OR_RETURN(chat.bos_token, token_text(tokenizer_config, "bos_token", config_file));
    KESTREL_ASSIGN_OR_RETURN(chat.eos_token, token_text(tokenizer_config, "eos_token", config_file));
    if (const auto it = tokenizer_config.find("add_bos_token"); it != tokenizer_config.end() && !it->is_null()) {
      if (!it->is_boolean())
        return make_error(ErrorCode::kInvalidArgument, "{}: add_bos_token must be true or false, got {}",
                          config_file, it->dump());
      chat.add_bos_token = it->get<bool>();
    }
  }
  KESTREL_ASSIGN_OR_RETURN(auto special_text, optional_text(dir, "special_tokens_map.json"));
  if (special_text) {
    KESTREL_ASSIGN_OR_RETURN(json special, object_from(*special_text, "special_tokens_map.json"));
    KESTREL_ASSIGN_OR_RETURN(std::string bos, token_text(special, "bos_token", "special_tokens_map.json"));
    KESTREL_ASSIGN_OR_RETURN(std::string eos, token_text(special, "eos_token", "special_tokens_map.json"));
    if (chat.bos_token.empty()) chat.bos_token = bos;
    if (chat.eos_token.empty()) chat.eos_token = eos;
  }

  // Separate template files take precedence over tokenizer_config.json, as in transformers.
  KESTREL_ASSIGN_OR_RETURN(auto json_file, optional_text(dir, "chat_template.json"));
  if (json_file) {
    KESTREL_ASSIGN_OR_RETURN(json holder, object_from(*json_file, "chat_template.json"));
    ChatConfig from_file;
    KESTREL_RETURN_IF_ERROR(read_inline_templates(holder, "chat_template.json", from_file));
    if (!from_file.has_template())
      return make_error(ErrorCode::kInvalidArgument, "chat_template.json: has no \"chat_template\"");
    chat.chat_template = from_file.chat_template;
    chat.template_file = from_file.template_file;
    for (auto& [name, source] : from_file.named_templates) chat.named_templates[name] = source;
  }
  KESTREL_ASSIGN_OR_RETURN(auto jinja_file, optional_text(dir, "chat_template.jinja"));
  if (jinja_file) {
    chat.chat_template = *jinja_file;
    chat.template_file = "chat_template.jinja";
  }
  std::error_code ec;
  const fs::path extra_dir = dir / "additional_chat_templates";
  if (fs::is_directory(extra_dir, ec)) {
    for (const auto& entry : fs::directory_iterator(extra_dir, ec)) {
      if (entry.path().extension() != ".jinja") continue;
      KESTREL_ASSIGN_OR_RETURN(auto text, optional_text(extra_dir, entry.path().filename().string()));
      if (text) chat.named_templates[entry.path().stem().string()] = *text;
    }
  }

  if (chat.has_template()) KESTREL_RETURN_IF_ERROR(check_template(chat.chat_template, chat.template_file));
  for (const auto& [name, source] : chat.named_templates)
    KESTREL_RETURN_IF_ERROR(check_template(source, "chat template '" + name + "'"));
  if (!chat.has_template() && !chat.named_templates.empty())
    return make_error(ErrorCode::kInvalidArgument, "the checkpoint names chat templates ({}) but none is 'default'",
                      chat.named_templates.begin()->first);

  chat.end_of_turn_ids = eos_ids;
  if (!chat.eos_token.empty() && !tokenizer_json.empty()) {
    const json tokenizer = json::parse(tokenizer_json.begin(), tokenizer_json.end(), nullptr, false);
    if (tokenizer.is_discarded() || !tokenizer.is_object())
      return make_error(ErrorCode::kInvalidArgument, "tokenizer.json: invalid JSON");
    const auto id = token_id(tokenizer, chat.eos_token);
    if (!id)
      return make_error(ErrorCode::kInvalidArgument, "{}: eos_token '{}' is not a token of tokenizer.json", config_file,
                        chat.eos_token);
    if (*id < 0 || *id >= vocab_size)
      return make_error(ErrorCode::kInvalidArgument, "{}: eos_token '{}' has id {}, outside the vocabulary ({})",
                        config_file, chat.eos_token, *id, vocab_size);
    if (std::find(chat.end_of_turn_ids.begin(), chat.end_of_turn_ids.end(), *id) == chat.end_of_turn_ids.end())
      chat.end_of_turn_ids.push_back(*id);
  }
  return chat;
}

void add_chat_metadata(const ChatConfig& chat, program::Metadata& metadata) {
  namespace keys = contract::hf_static;
  if (!chat.has_template()) return;
  metadata[keys::kChatTemplate] = chat.chat_template;
  for (const auto& [name, source] : chat.named_templates)
    metadata[std::string(keys::kChatTemplatePrefix) + name] = source;
  metadata[keys::kEndOfTurnIds] = chat.end_of_turn_ids;
  metadata[keys::kBosToken] = chat.bos_token;
  metadata[keys::kEosToken] = chat.eos_token;
  if (chat.add_bos_token) metadata[keys::kAddBosToken] = *chat.add_bos_token;
}

}  // namespace kestrel::exporter
