// A program's chat template: renders a conversation (a JSON list of messages) into the
// prompt text the model was trained on, the way Hugging Face transformers'
// apply_chat_template does, and turns that text into token ids.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/jinja/template.h"
#include "kestrel/llm/tokenizer.h"
#include "kestrel/program/spec.h"

namespace kestrel::llm {

struct ChatTokens {
  std::string bos_token;  // the texts templates write as {{ bos_token }} / {{ eos_token }}
  std::string eos_token;
  bool add_bos = false;  // the tokenizer prepends bos (tokenizer_config.json's add_bos_token)
  std::vector<int64_t> end_of_turn_ids;  // tokens that end an assistant turn
};

struct ChatRenderOptions {
  bool add_generation_prompt = true;
  // More template variables, as transformers' apply_chat_template keyword arguments: "tools"
  // and "documents" (null unless given; tools select the "tool_use" template when the program
  // has one), "enable_thinking", ... A JSON object.
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  jinja::RenderOptions limits;  // steps, output size, and strftime_now's clock
};

class ChatTemplate {
 public:
  // Parses the default template and the named ones ("tool_use", ...).
  static Result<ChatTemplate> create(const std::string& source, ChatTokens tokens,
                                     const std::map<std::string, std::string>& named = {});
  // The chat template a program carries (docs/hf_static-v1.md), nullopt when it has none;
  // malformed chat metadata is an error.
  static Result<std::optional<ChatTemplate>> from_metadata(const program::Metadata& metadata);

  // The prompt for `messages` (a JSON array of {"role", "content", ...} objects).
  Result<std::string> render(const nlohmann::ordered_json& messages, const ChatRenderOptions& options = {}) const;

  // Token ids of a rendered prompt: special tokens the template writes (e.g. <|im_start|>)
  // become their single ids; bos is prepended only when the tokenizer adds one (add_bos)
  // and the template did not already write it.
  Result<std::vector<int64_t>> encode(const Tokenizer& tokenizer, const std::string& prompt) const;

  const ChatTokens& tokens() const { return tokens_; }

 private:
  ChatTemplate(jinja::Template main, std::map<std::string, jinja::Template> named, ChatTokens tokens)
      : main_(std::move(main)), named_(std::move(named)), tokens_(std::move(tokens)) {}

  jinja::Template main_;
  std::map<std::string, jinja::Template> named_;
  ChatTokens tokens_;
};

}  // namespace kestrel::llm
