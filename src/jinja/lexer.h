// Splits a template into tokens the way Jinja's lexer does with transformers' settings
// (trim_blocks, lstrip_blocks, no trailing newline kept), including whitespace control
// ({%- -%} {%+ +%}), comments and raw blocks (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::jinja {

enum class TokenKind {
  kData,           // template text, emitted as it is
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,   // value: the decoded string
  kInteger,  // value: the digits without underscores (with a 0b/0o/0x prefix when given)
  kFloat,    // value: the literal without underscores
  kOperator,
  kEof,
};

struct Token {
  TokenKind kind;
  std::string value;
  size_t offset;  // byte offset in the normalized source
};

// Where an offset lies in the normalized source: 1-based line and column (in code points).
struct SourcePosition {
  int line;
  int column;
};

class SourceMap {
 public:
  explicit SourceMap(std::string_view source);
  SourcePosition position(size_t offset) const;

 private:
  std::string_view source_;
  std::vector<size_t> line_starts_;
};

// Jinja's newline handling: \r\n and \r become \n, and one trailing newline is dropped.
std::string normalize_source(std::string_view source);

// Tokenizes a normalized source. Errors are kInvalidArgument "line L, column C: ...".
Result<std::vector<Token>> tokenize(std::string_view source);

// "line 3, column 14" for error messages.
std::string describe_position(const SourceMap& map, size_t offset);

}  // namespace kestrel::jinja
