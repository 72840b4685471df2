// Token text to id, looked up by string_view without building a std::string (internal).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace kestrel::tokenizer {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

using TokenIds = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;

}  // namespace kestrel::tokenizer
