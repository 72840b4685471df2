// The chat metadata of a Hugging Face checkpoint: its chat template(s), the special-token
// texts templates write ({{ bos_token }}), whether the tokenizer prepends bos, and the tokens
// that end an assistant turn. Stored in the program as the optional chat keys of
// docs/hf_static-v1.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::exporter {

struct ChatConfig {
  std::string chat_template;                           // the default template; empty: none
  std::map<std::string, std::string> named_templates;  // other named templates ("tool_use", ...)
  std::string template_file;                           // where the default template came from
  std::string bos_token;                               // "" when the tokenizer has none
  std::string eos_token;
  std::optional<bool> add_bos_token;  // tokenizer_config.json's add_bos_token, when given
  std::vector<int64_t> end_of_turn_ids;  // the model's eos ids and the eos token's id

  bool has_template() const { return !chat_template.empty(); }
};

// Reads the chat metadata of the checkpoint directory `dir`:
//   - the template from chat_template.jinja, else chat_template.json ({"chat_template": ...}),
//     else tokenizer_config.json's chat_template (a string, or a list of {"name", "template"}
//     whose "default" entry is the default); named templates also from
//     additional_chat_templates/*.jinja;
//   - bos_token, eos_token (strings or {"content": ...}) and add_bos_token from
//     tokenizer_config.json (special_tokens_map.json fills missing tokens);
//   - the end-of-turn ids: `eos_ids` (config.json and generation_config.json's eos_token_id,
//     a number or a list) plus the id of eos_token in `tokenizer_json`'s added tokens or
//     vocabulary.
// Every template must parse: an error names the file, line and column. Missing files mean
// no chat metadata, not an error.
Result<ChatConfig> read_chat_config(const std::string& dir, std::span<const uint8_t> tokenizer_json,
                                    const std::vector<int64_t>& eos_ids, int64_t vocab_size);

// Adds the chat keys for `chat` (nothing when it has no template).
void add_chat_metadata(const ChatConfig& chat, program::Metadata& metadata);

}  // namespace kestrel::exporter
