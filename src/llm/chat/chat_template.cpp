#include "kestrel/llm/chat_template.h"

#include "kestrel/core/error_helpers.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::llm {

namespace keys = contract::hf_static;

namespace {

Result<std::string> optional_string(const program::Metadata& metadata, const char* key) {
  const auto it = metadata.find(key);
  if (it == metadata.end()) return std::string();
  if (!std::holds_alternative<std::string>(it->second))
    return make_error(ErrorCode::kInvalidArgument, "metadata '{}' must be a string", key);
  return std::get<std::string>(it->second);
}

}  // namespace

Result<ChatTemplate> ChatTemplate::create(const std::string& source, ChatTokens tokens,
                                          const std::map<std::string, std::string>& named) {
  auto main = jinja::Template::parse(source);
  if (!main.ok()) return main.error().with_context("chat template");
  std::map<std::string, jinja::Template> parsed;
  for (const auto& [name, text] : named) {
    auto t = jinja::Template::parse(text);
    if (!t.ok()) return t.error().with_context("chat template '" + name + "'");
    parsed.emplace(name, std::move(t).value());
  }
  return ChatTemplate(std::move(main).value(), std::move(parsed), std::move(tokens));
}

Result<std::optional<ChatTemplate>> ChatTemplate::from_metadata(const program::Metadata& metadata) {
  const auto it = metadata.find(keys::kChatTemplate);
  if (it == metadata.end()) return std::optional<ChatTemplate>();
  KESTREL_ASSIGN_OR_RETURN(std::string source, optional_string(metadata, keys::kChatTemplate));
  ChatTokens tokens;
  KESTREL_ASSIGN_OR_RETURN(tokens.bos_token, optional_string(metadata, keys::kBosToken));
  KESTREL_ASSIGN_OR_RETURN(tokens.eos_token, optional_string(metadata, keys::kEosToken));
  if (const auto bos = metadata.find(keys::kAddBosToken); bos != metadata.end()) {
    if (!std::holds_alternative<bool>(bos->second))
      return make_error(ErrorCode::kInvalidArgument, "metadata '{}' must be a bool", keys::kAddBosToken);
    tokens.add_bos = std::get<bool>(bos->second);
  }
  if (const auto eot = metadata.find(keys::kEndOfTurnIds); eot != metadata.end()) {
    if (!std::holds_alternative<std::vector<int64_t>>(eot->second))
      return make_error(ErrorCode::kInvalidArgument, "metadata '{}' must be an int list", keys::kEndOfTurnIds);
    tokens.end_of_turn_ids = std::get<std::vector<int64_t>>(eot->second);
  }
  std::map<std::string, std::string> named;
  const std::string prefix = keys::kChatTemplatePrefix;
  for (const auto& [key, value] : metadata) {
    if (key.rfind(prefix, 0) != 0) continue;
    KESTREL_ASSIGN_OR_RETURN(named[key.substr(prefix.size())], optional_string(metadata, key.c_str()));
  }
  KESTREL_ASSIGN_OR_RETURN(ChatTemplate chat, create(source, std::move(tokens), named));
  return std::optional<ChatTemplate>(std::move(chat));
}

Result<std::string> ChatTemplate::render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options) const {
  if (!messages.is_array())
    return make_error(ErrorCode::kInvalidArgument, "messages must be a JSON list, got {}", messages.type_name());
  for (size_t i = 0; i < messages.size(); ++i)
    if (!messages[i].is_object())
      return make_error(ErrorCode::kInvalidArgument, "message {} must be a JSON object, got {}", i,
                        messages[i].type_name());
  if (!options.extra.is_object())
    return make_error(ErrorCode::kInvalidArgument, "extra template variables must be a JSON object");
  // The variables transformers passes: messages, tools, documents, add_generation_prompt,
  // the special tokens, then the caller's keyword arguments.
  nlohmann::ordered_json context = {{"messages", messages},
                                    {"tools", nullptr},
                                    {"documents", nullptr},
                                    {"add_generation_prompt", options.add_generation_prompt},
                                    {"bos_token", tokens_.bos_token},
                                    {"eos_token", tokens_.eos_token}};
  for (const auto& [key, value] : options.extra.items()) context[key] = value;
  const bool has_tools = !context["tools"].is_null();
  const auto tool_template = named_.find("tool_use");
  const jinja::Template& chosen = has_tools && tool_template != named_.end() ? tool_template->second : main_;
  auto rendered = chosen.render(context, options.limits);
  if (!rendered.ok()) return rendered.error().with_context("rendering the chat template");
  return rendered;
}

Result<std::vector<int64_t>> ChatTemplate::encode(const Tokenizer& tokenizer, const std::string& prompt) const {
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> ids, tokenizer.encode(prompt, /*add_bos=*/false));
  const int64_t bos = tokenizer.bos_id();
  if (tokens_.add_bos && bos >= 0 && (ids.empty() || ids.front() != bos)) ids.insert(ids.begin(), bos);
  return ids;
}

}  // namespace kestrel::llm
