#include "tokenizer/utf8.h"

namespace kestrel::tokenizer::detail {
namespace {

// Result of examining the sequence that starts at bytes[pos].
struct SequenceCheck {
  size_t length = 0;   // bytes of the complete valid sequence (0 if none)
  size_t invalid = 0;  // bytes of the maximal invalid subpart (0 if valid or truncated)
  bool truncated = false;  // valid so far, but the input ends before the sequence does
};

SequenceCheck check_sequence(std::string_view bytes, size_t pos) {
  const auto b0 = static_cast<uint8_t>(bytes[pos]);
  if (b0 < 0x80) return {1, 0, false};
  size_t need = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b0 >= 0xE1 && b0 <= 0xEC) || b0 == 0xEE || b0 == 0xEF) {
    need = 2;
  } else if (b0 == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b0 == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b0 >= 0xF1 && b0 <= 0xF3) {
    need = 3;
  } else if (b0 == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    return {0, 1, false};  // 80..C1, F5..FF never start a sequence
  }
  for (size_t k = 1; k <= need; ++k) {
    if (pos + k >= bytes.size()) return {0, 0, true};
    const auto b = static_cast<uint8_t>(bytes[pos + k]);
    const uint8_t low = k == 1 ? lo : 0x80;
    const uint8_t high = k == 1 ? hi : 0xBF;
    if (b < low || b > high) return {0, k, false};
  }
  return {need + 1, 0, false};
}

}  // namespace

size_t append_utf8_lossy(std::string_view bytes, bool final, std::string& out) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const SequenceCheck check = check_sequence(bytes, pos);
    if (check.length > 0) {
      out.append(bytes.substr(pos, check.length));
      pos += check.length;
    } else if (check.truncated) {
      if (!final) return pos;
      out.append(kReplacementChar);
      return bytes.size();
    } else {
      out.append(kReplacementChar);
      pos += check.invalid;
    }
  }
  return pos;
}

size_t utf8_sequence_length(std::string_view bytes, size_t pos) {
  if (pos >= bytes.size()) return 0;
  return check_sequence(bytes, pos).length;
}

std::vector<std::string_view> split_utf8_chars(std::string_view text) {
  std::vector<std::string_view> chars;
  chars.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t len = utf8_sequence_length(text, pos);
    if (len == 0) len = 1;
    chars.push_back(text.substr(pos, len));
    pos += len;
  }
  return chars;
}

uint32_t decode_code_point(std::string_view bytes, size_t pos, size_t len) {
  const auto b = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(bytes[pos + i])); };
  switch (len) {
    case 1: return b(0);
    case 2: return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
    case 3: return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
    case 4: return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
    default: return 0xFFFD;
  }
}

void append_code_point(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

std::optional<uint8_t> parse_byte_token(std::string_view s) {
  if (s.size() != 6 || s[0] != '<' || s[1] != '0' || s[2] != 'x' || s[5] != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  const int hi = hex(s[3]), lo = hex(s[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<uint8_t>(hi * 16 + lo);
}

}  // namespace kestrel::tokenizer::detail
