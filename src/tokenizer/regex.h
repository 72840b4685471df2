// PCRE2 wrapper for pre-tokenizer patterns (internal).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::tokenizer::detail {

class Regex {
 public:
  // Compiles with UTF and UCP (Unicode properties for \s, \w, \d and POSIX classes), matching
  // invalid UTF-8 input without failing (invalid bytes are simply never matched). With
  // literal, the pattern is matched as a plain string.
  static Result<Regex> compile(std::string_view pattern, bool literal = false);

  // Non-overlapping, non-empty matches from left to right, as [begin, end) byte offsets.
  Result<std::vector<std::pair<size_t, size_t>>> find_all(std::string_view text) const;

  const std::string& pattern() const { return pattern_; }

 private:
  struct Code;
  Regex(std::shared_ptr<const Code> code, std::string pattern) : code_(std::move(code)), pattern_(std::move(pattern)) {}
  std::shared_ptr<const Code> code_;
  std::string pattern_;
};

// Pattern of the GPT-2 ByteLevel pre-tokenizer (use_regex = true).
inline constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

}  // namespace kestrel::tokenizer::detail
