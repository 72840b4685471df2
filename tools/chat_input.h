// Reads a conversation file for `kestrel chat-template` and `kestrel run --messages`.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "kestrel/core/result.h"

namespace kestrel::tools {

struct ChatInput {
  nlohmann::ordered_json messages;  // a list of {"role", "content", ...}
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();  // tools, enable_thinking, ...
};

// The file holds either a JSON list of messages, or an object with "messages" and further
// template variables ("tools", "documents", "enable_thinking", ...).
Result<ChatInput> read_chat_input(const std::string& path);

}  // namespace kestrel::tools
