#include "tools/chat_input.h"

#include "kestrel/core/error_helpers.h"
#include "tools/json_file.h"

namespace kestrel::tools {

namespace {
constexpr uint64_t kMaxMessagesFileBytes = uint64_t{64} << 20;
}  // namespace

Result<ChatInput> read_chat_input(const std::string& path) {
  KESTREL_ASSIGN_OR_RETURN(auto json,
                           read_json_file<nlohmann::ordered_json>(path, kMaxMessagesFileBytes, "messages file"));
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
