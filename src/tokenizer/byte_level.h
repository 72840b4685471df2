// GPT-2 byte-to-unicode mapping used by byte-level BPE (internal).
//
// Printable bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) map to the code point of the same value;
// the other 68 bytes map, in increasing byte order, to U+0100, U+0101, ... (so ' ' is 'Ġ').
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kestrel::tokenizer::detail {

class ByteLevelMap {
 public:
  static const ByteLevelMap& get();

  // UTF-8 of the character that stands for `byte`.
  const std::string& encode_byte(uint8_t byte) const { return forward_[byte]; }
  // The byte-level spelling of arbitrary bytes.
  std::string encode(std::string_view bytes) const;
  // Bytes spelled by `text`, or nullopt if a character of `text` is not in the mapping.
  std::optional<std::string> decode(std::string_view text) const;

 private:
  ByteLevelMap();
  std::array<std::string, 256> forward_;
  std::array<int16_t, 512> backward_;  // code point -> byte, -1 if unmapped
};

}  // namespace kestrel::tokenizer::detail
