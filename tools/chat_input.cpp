#include "tools/chat_input.h"

#include <fstream>
#include <sstream>

#include "kestrel/core/error_helpers.h"

namespace kestrel::tools {

Result<ChatInput> read_chat_input(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return make_error(ErrorCode::kIo, "cannot open messages file '{}'", path);
  std::ostringstream text;
  text << file.rdbuf();
  auto json = nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON", path);
  ChatInput input;
  if (json.is_array()) {
    input.messages = std::move(json);
  } else if (json.is_object() && json.contains("messages")) {
    input.messages = json["messages"];
    for (const auto& [key, value] : json.items())
      if (key != "messages") input.extra[key] = value;
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: expected a list of messages or an object with \"messages\" (and template variables such "
                      "as \"tools\")",
                      path);
  }
  if (!input.messages.is_array())
    return make_error(ErrorCode::kInvalidArgument, "{}: \"messages\" must be a list", path);
  return input;
}

}  // namespace kestrel::tools
