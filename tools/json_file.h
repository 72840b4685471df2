// Reads a JSON input file of the CLI (messages, backend options) with a size bound; a syntax
// error names the file and the byte where parsing stopped.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/file.h"

namespace kestrel::tools {

template <typename Json = nlohmann::json>
Result<Json> read_json_file(const std::string& path, uint64_t max_bytes, std::string_view what) {
  KESTREL_ASSIGN_OR_RETURN(std::string text, read_file_text(path, max_bytes, what));
  try {
    return Json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    return make_error(ErrorCode::kInvalidArgument, "{} '{}' is not valid JSON (at byte {}): {}", what, path, e.byte,
                      e.what());
  }
}

}  // namespace kestrel::tools
