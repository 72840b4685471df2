#include "jinja/lexer.h"

#include <algorithm>

#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_ascii_digit(c); }
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Operators, longest first (Jinja's operator table).
constexpr std::string_view kOperators[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
                                           "]",  "(",  ")",  "{",  "}",  "=",  "<", ">", ".", ":", "|", ",", ";"};

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source), map_(source) {}

  Result<std::vector<Token>> run() {
    while (pos_ < src_.size()) {
      const size_t tag = find_tag(pos_);
      if (tag == std::string_view::npos) {
        emit(TokenKind::kData, std::string(src_.substr(pos_)), pos_);
        pos_ = src_.size();
        break;
      }
      const char kind = src_[tag + 1];
      const size_t after = tag + 2;
      const char sign = after < src_.size() && (src_[after] == '-' || src_[after] == '+') ? src_[after] : 0;
      size_t raw_body = 0;
      const bool raw = kind == '%' && match_raw_begin(tag, &raw_body);
      emit_text(pos_, tag, sign, kind != '{');
      line_starting_ = false;
      if (raw) {
        line_starting_ = raw_body > 0 && src_[raw_body - 1] == '\n';
        pos_ = raw_body;
        KESTREL_RETURN_IF_ERROR(lex_raw(tag));
      } else if (kind == '#') {
        KESTREL_RETURN_IF_ERROR(lex_comment(tag, after + (sign ? 1 : 0)));
      } else {
        KESTREL_RETURN_IF_ERROR(lex_tag(tag, kind == '%', after + (sign ? 1 : 0)));
      }
    }
    emit(TokenKind::kEof, "", src_.size());
    return std::move(tokens_);
  }

 private:
  Error fail(size_t offset, const std::string& message) const {
    return Error(ErrorCode::kInvalidArgument, describe_position(map_, offset) + ": " + message);
  }

  void emit(TokenKind kind, std::string value, size_t offset) { tokens_.push_back({kind, std::move(value), offset}); }

  size_t find_tag(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string_view::npos; i = src_.find('{', i + 1))
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    return std::string_view::npos;
  }

  // Skips Python whitespace (\s*) from `pos`.
  size_t skip_space(size_t pos) const {
    while (pos < src_.size()) {
      size_t length = 0;
      if (!is_python_space(decode_at(src_, pos, &length))) break;
      pos += length;
    }
    return pos;
  }

  bool only_space(std::string_view text) const {
    for (size_t pos = 0; pos < text.size();) {
      size_t length = 0;
      if (!is_python_space(decode_at(text, pos, &length))) return false;
      pos += length;
    }
    return true;
  }

  // Emits the text [begin, end) before a tag, after the tag's whitespace control: "-" strips
  // all whitespace before it; otherwise lstrip_blocks removes the indentation of a block or
  // comment tag that starts its line.
  void emit_text(size_t begin, size_t end, char sign, bool block_like) {
    std::string_view text = src_.substr(begin, end - begin);
    if (sign == '-') {
      text = strip(text, "", true, false, true);
    } else if (sign != '+' && block_like) {
      const size_t newline = text.rfind('\n');
      const size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
      if ((line_start > 0 || line_starting_) && line_start < text.size() && only_space(text.substr(line_start)))
        text = text.substr(0, line_start);
    }
    if (!text.empty()) emit(TokenKind::kData, std::string(text), begin);
  }

  // Matches "{%[-+]? raw [-]?%}" at `tag`; on success *body is where the raw text starts.
  bool match_raw_begin(size_t tag, size_t* body) const {
    size_t pos = tag + 2;
    if (pos < src_.size() && (src_[pos] == '-' || src_[pos] == '+')) ++pos;
    pos = skip_space(pos);
    if (src_.compare(pos, 3, "raw") != 0) return false;
    pos = skip_space(pos + 3);
    if (src_.compare(pos, 3, "-%}") == 0) {
      *body = skip_space(pos + 3);
      return true;
    }
    if (src_.compare(pos, 2, "%}") == 0) {
      *body = pos + 2;
      return true;
    }
    return false;
  }

  // Consumes a block end marker at `pos` ("+%}", "-%}" + whitespace, "%}" + one newline);
  // returns the position after it, or npos when there is none.
  size_t match_block_end(size_t pos, std::string_view close) const {
    if (src_.compare(pos, 1, "+") == 0 && src_.compare(pos + 1, close.size(), close) == 0)
      return pos + 1 + close.size();
    if (src_.compare(pos, 1, "-") == 0 && src_.compare(pos + 1, close.size(), close) == 0)
      return skip_space(pos + 1 + close.size());
    if (src_.compare(pos, close.size(), close) == 0) {
      const size_t end = pos + close.size();
      return end < src_.size() && src_[end] == '\n' ? end + 1 : end;  // trim_blocks
    }
    return std::string_view::npos;
  }

  Status lex_raw(size_t begin_tag) {
    for (size_t tag = find_tag(pos_); tag != std::string_view::npos; tag = find_tag(tag + 1)) {
      if (src_[tag + 1] != '%') continue;
      size_t p = tag + 2;
      const char sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : 0;
      if (sign) ++p;
      p = skip_space(p);
      if (src_.compare(p, 6, "endraw") != 0) continue;
      const size_t end = match_block_end(skip_space(p + 6), "%}");
      if (end == std::string_view::npos) continue;
      emit_text(pos_, tag, sign, true);
      pos_ = end;
      line_starting_ = src_[end - 1] == '\n';
      return ok_status();
    }
    return fail(begin_tag, "missing end of raw block ({% endraw %})");
  }

  Status lex_comment(size_t tag, size_t body) {
    const size_t close = src_.find("#}", body);
    if (close == std::string_view::npos) return fail(tag, "missing end of comment tag (#})");
    const size_t marker = close > body && (src_[close - 1] == '-' || src_[close - 1] == '+') ? close - 1 : close;
    pos_ = match_block_end(marker, "#}");
    line_starting_ = src_[pos_ - 1] == '\n';
    return ok_status();
  }

  Status lex_tag(size_t tag, bool block, size_t pos) {
    emit(block ? TokenKind::kBlockBegin : TokenKind::kVariableBegin, "", tag);
    std::vector<char> balance;
    while (pos < src_.size()) {
      if (balance.empty()) {
        size_t end = std::string_view::npos;
        if (block) {
          end = match_block_end(pos, "%}");
        } else if (src_.compare(pos, 3, "-}}") == 0) {
          end = skip_space(pos + 3);
        } else if (src_.compare(pos, 2, "}}") == 0) {
          end = pos + 2;
        }
        if (end != std::string_view::npos) {
          emit(block ? TokenKind::kBlockEnd : TokenKind::kVariableEnd, "", pos);
          pos_ = end;
          line_starting_ = src_[end - 1] == '\n';
          return ok_status();
        }
      }
      size_t length = 0;
      const uint32_t cp = decode_at(src_, pos, &length);
      const char c = src_[pos];
      if (is_python_space(cp)) {
        pos += length;
      } else if (is_ascii_digit(c)) {
        KESTREL_ASSIGN_OR_RETURN(pos, lex_number(pos));
      } else if (is_name_start(c)) {
        size_t end = pos;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(TokenKind::kName, std::string(src_.substr(pos, end - pos)), pos);
        pos = end;
      } else if (c == '\'' || c == '"') {
        KESTREL_ASSIGN_OR_RETURN(pos, lex_string(pos));
      } else {
        std::string_view op;
        for (std::string_view candidate : kOperators)
          if (src_.compare(pos, candidate.size(), candidate) == 0) {
            op = candidate;
            break;
          }
        if (op.empty()) return fail(pos, "unexpected character '" + std::string(src_.substr(pos, length)) + "'");
        if (op == "(" || op == "[" || op == "{") {
          balance.push_back(op == "(" ? ')' : op == "[" ? ']' : '}');
        } else if (op == ")" || op == "]" || op == "}") {
          if (balance.empty()) return fail(pos, "unexpected '" + std::string(op) + "'");
          if (balance.back() != op[0])
            return fail(pos, "unexpected '" + std::string(op) + "', expected '" + std::string(1, balance.back()) + "'");
          balance.pop_back();
        }
        emit(TokenKind::kOperator, std::string(op), pos);
        pos += op.size();
      }
    }
    pos_ = src_.size();  // the parser reports the missing end of the tag
    return ok_status();
  }

  // Digits with single underscores between them; returns the end.
  size_t digits(size_t pos, std::string& out) const {
    while (pos < src_.size() && is_ascii_digit(src_[pos])) {
      out += src_[pos++];
      if (pos + 1 < src_.size() && src_[pos] == '_' && is_ascii_digit(src_[pos + 1])) ++pos;
    }
    return pos;
  }

  Result<size_t> lex_number(size_t start) {
    // Prefixed integers: 0b, 0o, 0x.
    if (src_[start] == '0' && start + 2 < src_.size()) {
      const char p = static_cast<char>(src_[start + 1] | 0x20);
      const int base = p == 'b' ? 2 : p == 'o' ? 8 : p == 'x' ? 16 : 0;
      if (base != 0) {
        std::string text = "0";
        text += p;
        size_t pos = start + 2;
        while (pos < src_.size()) {
          if (src_[pos] == '_') {
            ++pos;
            continue;
          }
          const int v = hex_value(src_[pos]);
          if (v < 0 || v >= base) break;
          text += src_[pos++];
        }
        if (text.size() > 2) {
          emit(TokenKind::kInteger, text, start);
          return pos;
        }
      }
    }
    std::string text;
    size_t pos = digits(start, text);
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    bool is_float = false;
    if (!after_dot && pos + 1 < src_.size() && src_[pos] == '.' && is_ascii_digit(src_[pos + 1])) {
      text += '.';
      pos = digits(pos + 1, text);
      is_float = true;
    }
    if (!after_dot && pos < src_.size() && (src_[pos] == 'e' || src_[pos] == 'E')) {
      size_t p = pos + 1;
      std::string exponent = "e";
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) exponent += src_[p++];
      if (p < src_.size() && is_ascii_digit(src_[p])) {
        pos = digits(p, exponent);
        text += exponent;
        is_float = true;
      }
    }
    if (!is_float && text.size() > 1 && text[0] == '0') {
      // Python allows only zeros after a leading zero ("00"), never "012".
      if (text.find_first_not_of('0') != std::string::npos)
        return fail(start, "invalid integer literal '" + text + "' (leading zeros are not allowed)");
    }
    emit(is_float ? TokenKind::kFloat : TokenKind::kInteger, text, start);
    return pos;
  }

  // A quoted string with Python escapes (\n \t \\ \' \" \xNN \uNNNN \UNNNNNNNN, octal, and a
  // backslash-newline continuation); unknown escapes keep their backslash.
  Result<size_t> lex_string(size_t start) {
    const char quote = src_[start];
    std::string value;
    size_t pos = start + 1;
    while (true) {
      if (pos >= src_.size()) return fail(start, "unterminated string literal");
      const char c = src_[pos];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++pos;
        continue;
      }
      if (pos + 1 >= src_.size()) return fail(start, "unterminated string literal");
      const char e = src_[pos + 1];
      pos += 2;
      switch (e) {
        case '\n': break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'n': value += '\n'; break;
        case 'r': value += '\r'; break;
        case 't': value += '\t'; break;
        case 'v': value += '\v'; break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t count = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t i = 0; i < count; ++i) {
            const int v = pos + i < src_.size() ? hex_value(src_[pos + i]) : -1;
            if (v < 0) return fail(pos - 2, fmt::format("truncated \\{} escape in a string literal", e));
            cp = cp * 16 + static_cast<uint32_t>(v);
          }
          if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return fail(pos - 2, fmt::format("escape \\{} names no valid character", e));
          append_utf8(cp, value);
          pos += count;
          break;
        }
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int i = 0; i < 2 && pos < src_.size() && src_[pos] >= '0' && src_[pos] <= '7'; ++i)
              cp = cp * 8 + static_cast<uint32_t>(src_[pos++] - '0');
            append_utf8(cp, value);
          } else {
            value += '\\';
            value += e;
          }
      }
    }
    emit(TokenKind::kString, std::move(value), start);
    return pos + 1;
  }

  std::string_view src_;
  SourceMap map_;
  size_t pos_ = 0;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

SourceMap::SourceMap(std::string_view source) : source_(source) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < source.size(); ++i)
    if (source[i] == '\n') line_starts_.push_back(i + 1);
}

SourcePosition SourceMap::position(size_t offset) const {
  offset = std::min(offset, source_.size());
  const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line = static_cast<size_t>(it - line_starts_.begin());
  const size_t start = line_starts_[line - 1];
  const size_t column = code_point_count(source_.substr(start, offset - start)) + 1;
  return {static_cast<int>(line), static_cast<int>(column)};
}

std::string describe_position(const SourceMap& map, size_t offset) {
  const SourcePosition p = map.position(offset);
  return fmt::format("line {}, column {}", p.line, p.column);
}

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Result<std::vector<Token>> tokenize(std::string_view source) { return Lexer(source).run(); }

}  // namespace kestrel::jinja
