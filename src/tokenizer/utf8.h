// UTF-8 helpers shared by the tokenizers (internal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::tokenizer::detail {

inline constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";  // U+FFFD

// Appends the valid UTF-8 of `bytes` to `out`, each maximal invalid subpart as one U+FFFD
// (the Unicode "best practice" that Rust's from_utf8_lossy follows). When `final` is false a
// truncated but so far valid sequence at the end is left unconsumed. Returns the number of
// bytes consumed.
size_t append_utf8_lossy(std::string_view bytes, bool final, std::string& out);

inline std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  append_utf8_lossy(bytes, true, out);
  return out;
}

// Length of the well-formed UTF-8 sequence starting at bytes[pos], or 0 if the bytes there do
// not start one (an invalid or truncated sequence).
size_t utf8_sequence_length(std::string_view bytes, size_t pos);

// Splits into characters: each well-formed UTF-8 sequence is one piece, each byte of
// malformed input is a piece on its own.
std::vector<std::string_view> split_utf8_chars(std::string_view text);

// Code point of a well-formed sequence of `len` bytes at bytes[pos].
uint32_t decode_code_point(std::string_view bytes, size_t pos, size_t len);

void append_code_point(uint32_t cp, std::string& out);

// A byte-fallback piece "<0xAB>" -> 0xAB; nothing for any other piece.
std::optional<uint8_t> parse_byte_token(std::string_view s);

}  // namespace kestrel::tokenizer::detail
