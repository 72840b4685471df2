#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

namespace kestrel::tokenizer::detail {
namespace {

bool is_printable_byte(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

}  // namespace

ByteLevelMap::ByteLevelMap() {
  backward_.fill(-1);
  uint32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const uint32_t cp = is_printable_byte(b) ? static_cast<uint32_t>(b) : next++;
    append_code_point(cp, forward_[b]);
    backward_[cp] = static_cast<int16_t>(b);
  }
}

const ByteLevelMap& ByteLevelMap::get() {
  static const ByteLevelMap map;
  return map;
}

std::string ByteLevelMap::encode(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += forward_[static_cast<uint8_t>(c)];
  return out;
}

std::optional<std::string> ByteLevelMap::decode(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t len = utf8_sequence_length(text, pos);
    if (len == 0) return std::nullopt;
    const uint32_t cp = decode_code_point(text, pos, len);
    if (cp >= backward_.size() || backward_[cp] < 0) return std::nullopt;
    out.push_back(static_cast<char>(backward_[cp]));
    pos += len;
  }
  return out;
}

}  // namespace kestrel::tokenizer::detail
