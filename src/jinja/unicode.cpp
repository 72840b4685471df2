#include "jinja/unicode.h"

#include <locale.h>
#include <wctype.h>

namespace kestrel::jinja {

namespace {

// The C library's UTF-8 character tables (glibc ships C.UTF-8 built in); null when absent,
// in which case only ASCII changes case.
locale_t utf8_locale() {
  static const locale_t locale = newlocale(LC_CTYPE_MASK, "C.UTF-8", static_cast<locale_t>(0));
  return locale;
}

size_t sequence_length(std::string_view text, size_t pos) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(pos);
  size_t length = 0;
  uint8_t low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead < 0x80) return 1;
  if (lead >= 0xC2 && lead <= 0xDF) length = 2;
  else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;
    if (lead == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (pos + length > text.size()) return 0;
  if (byte(pos + 1) < low || byte(pos + 1) > high) return 0;
  for (size_t i = 2; i < length; ++i)
    if ((byte(pos + i) & 0xC0) != 0x80) return 0;
  return length;
}

template <typename Map>
std::string map_code_points(std::string_view text, Map&& map) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    if (length == 1 && static_cast<uint8_t>(text[pos]) >= 0x80) {
      out += text[pos];  // an invalid byte stays as it is
    } else {
      append_utf8(map(cp), out);
    }
    pos += length;
  }
  return out;
}

}  // namespace

uint32_t decode_at(std::string_view text, size_t pos, size_t* length) {
  const size_t n = sequence_length(text, pos);
  const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<uint8_t>(text[pos + i])); };
  if (n <= 1) {
    *length = 1;
    return byte(0);
  }
  *length = n;
  if (n == 2) return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
  if (n == 3) return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
  return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) | (byte(3) & 0x3F);
}

std::vector<size_t> code_point_offsets(std::string_view text) {
  std::vector<size_t> offsets;
  offsets.reserve(text.size() + 1);
  for (size_t pos = 0; pos < text.size();) {
    offsets.push_back(pos);
    const size_t n = sequence_length(text, pos);
    pos += n == 0 ? 1 : n;
  }
  offsets.push_back(text.size());
  return offsets;
}

size_t code_point_count(std::string_view text) {
  size_t count = 0;
  for (size_t pos = 0; pos < text.size(); ++count) {
    const size_t n = sequence_length(text, pos);
    pos += n == 0 ? 1 : n;
  }
  return count;
}

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool is_python_space(uint32_t cp) {
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D:
    case 0x1C: case 0x1D: case 0x1E: case 0x1F: case 0x20:
    case 0x85: case 0xA0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

uint32_t upper_code_point(uint32_t cp) {
  if (cp < 0x80) return cp >= 'a' && cp <= 'z' ? cp - 32 : cp;
  const locale_t locale = utf8_locale();
  return locale ? static_cast<uint32_t>(towupper_l(static_cast<wint_t>(cp), locale)) : cp;
}

uint32_t lower_code_point(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
  const locale_t locale = utf8_locale();
  return locale ? static_cast<uint32_t>(towlower_l(static_cast<wint_t>(cp), locale)) : cp;
}

bool is_alpha(uint32_t cp) {
  if (cp < 0x80) return (cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z');
  const locale_t locale = utf8_locale();
  return locale && iswalpha_l(static_cast<wint_t>(cp), locale);
}

bool is_digit(uint32_t cp) {
  if (cp < 0x80) return cp >= '0' && cp <= '9';
  const locale_t locale = utf8_locale();
  return locale && iswdigit_l(static_cast<wint_t>(cp), locale);
}

bool is_alnum(uint32_t cp) { return is_alpha(cp) || is_digit(cp); }

size_t line_break_length(std::string_view text, size_t pos) {
  size_t length = 0;
  const uint32_t cp = decode_at(text, pos, &length);
  switch (cp) {
    case '\r': return pos + 1 < text.size() && text[pos + 1] == '\n' ? 2 : 1;
    case '\n': case 0x0B: case 0x0C: case 0x1C: case 0x1D: case 0x1E: case 0x85: case 0x2028: case 0x2029:
      return length;
    default: return 0;
  }
}

bool is_cased_upper(uint32_t cp) { return lower_code_point(cp) != cp; }
bool is_cased_lower(uint32_t cp) { return upper_code_point(cp) != cp; }

std::string to_upper(std::string_view text) { return map_code_points(text, upper_code_point); }
std::string to_lower(std::string_view text) { return map_code_points(text, lower_code_point); }

std::string_view strip(std::string_view text, std::string_view chars, bool whitespace, bool left, bool right) {
  std::vector<uint32_t> set;
  for (size_t pos = 0; pos < chars.size();) {
    size_t length = 0;
    set.push_back(decode_at(chars, pos, &length));
    pos += length;
  }
  const auto strippable = [&](uint32_t cp) {
    if (whitespace) return is_python_space(cp);
    for (uint32_t c : set)
      if (c == cp) return true;
    return false;
  };
  const std::vector<size_t> offsets = code_point_offsets(text);
  size_t first = 0, last = offsets.size() - 1;  // code point indices [first, last)
  size_t length = 0;
  if (left)
    while (first < last && strippable(decode_at(text, offsets[first], &length))) ++first;
  if (right)
    while (last > first && strippable(decode_at(text, offsets[last - 1], &length))) --last;
  return text.substr(offsets[first], offsets[last] - offsets[first]);
}

}  // namespace kestrel::jinja
