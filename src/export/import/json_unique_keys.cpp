// nlohmann-json keeps the last of duplicate object keys without a word. In a checkpoint that
// hides a conflict (a tensor described twice, a config field given twice), so the importers
// parse through a callback that refuses them.
#include <set>
#include <vector>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::import {

Result<nlohmann::json> parse_json_unique_keys(std::string_view text, const std::string& source) {
  struct Frame {
    std::set<std::string> keys;  // empty for arrays
    std::string key;             // the object key being parsed; "[]" inside arrays
  };
  std::vector<Frame> stack;
  std::string duplicate;  // dotted path of the first repeated key
  const auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    switch (event) {
      case Event::object_start: stack.push_back({}); break;
      case Event::array_start: stack.push_back({{}, "[]"}); break;
      case Event::object_end:
      case Event::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case Event::key: {
        if (stack.empty()) break;
        std::string key = parsed.get<std::string>();
        if (!stack.back().keys.insert(key).second && duplicate.empty()) {
          for (size_t i = 0; i + 1 < stack.size(); ++i) duplicate += stack[i].key + ".";
          duplicate += key;
        }
        stack.back().key = std::move(key);
        break;
      }
      case Event::value: break;
    }
    return true;
  };
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text.begin(), text.end(), callback);
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::kInvalidArgument, "{}: invalid JSON: {}", source, e.what());
  }
  if (!duplicate.empty())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' appears twice (a JSON object's keys must be unique)",
                      source, duplicate);
  return json;
}

}  // namespace kestrel::exporter::import
