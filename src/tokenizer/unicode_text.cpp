#include "tokenizer/unicode_text.h"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf16.h>
#include <unicode/ustring.h>

#include "kestrel/core/error_helpers.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer::detail {

namespace {

Status require_utf8(std::string_view text, const char* step) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_sequence_length(text, pos);
    if (length == 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "tokenizer normalizer {}: the text is not valid UTF-8 (byte 0x{:02X} at offset {})", step,
                        static_cast<uint8_t>(text[pos]), pos);
    pos += length;
  }
  return ok_status();
}

const icu::Normalizer2* normalizer(NormalForm form, UErrorCode& status) {
  switch (form) {
    case NormalForm::kNfc: return icu::Normalizer2::getNFCInstance(status);
    case NormalForm::kNfd: return icu::Normalizer2::getNFDInstance(status);
    case NormalForm::kNfkc: return icu::Normalizer2::getNFKCInstance(status);
    case NormalForm::kNfkd: return icu::Normalizer2::getNFKDInstance(status);
  }
  status = U_ILLEGAL_ARGUMENT_ERROR;
  return nullptr;
}

}  // namespace

const char* normal_form_name(NormalForm form) {
  switch (form) {
    case NormalForm::kNfc: return "NFC";
    case NormalForm::kNfd: return "NFD";
    case NormalForm::kNfkc: return "NFKC";
    case NormalForm::kNfkd: return "NFKD";
  }
  return "?";
}

Result<std::string> normalize_unicode(std::string_view text, NormalForm form) {
  KESTREL_RETURN_IF_ERROR(require_utf8(text, normal_form_name(form)));
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = normalizer(form, status);
  if (U_FAILURE(status) || n == nullptr)
    return make_error(ErrorCode::kUnavailable, "ICU has no {} normalizer: {}", normal_form_name(form),
                      u_errorName(status));
  const icu::UnicodeString input = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  const icu::UnicodeString output = n->normalize(input, status);
  if (U_FAILURE(status))
    return make_error(ErrorCode::kInvalidArgument, "{} normalization failed: {}", normal_form_name(form),
                      u_errorName(status));
  std::string out;
  output.toUTF8String(out);
  return out;
}

Result<std::string> lowercase_unicode(std::string_view text) {
  KESTREL_RETURN_IF_ERROR(require_utf8(text, "Lowercase"));
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = utf8_sequence_length(text, pos);
    const uint32_t cp = decode_code_point(text, pos, length);
    pos += length;
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp >= 'A' && cp <= 'Z' ? cp - 'A' + 'a' : cp));
      continue;
    }
    // One character alone: the full mapping without the context rules of whole strings.
    UChar units[2];
    int32_t count = 0;
    U16_APPEND_UNSAFE(units, count, cp);
    UChar lower[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t written = u_strToLower(lower, 8, units, count, "", &status);
    if (U_FAILURE(status))
      return make_error(ErrorCode::kInternal, "lowercasing U+{:04X} failed: {}", cp, u_errorName(status));
    const icu::UnicodeString mapped(lower, written);
    mapped.toUTF8String(out);
  }
  return out;
}

std::string strip_unicode_whitespace(std::string_view text, bool left, bool right) {
  size_t begin = 0, end = text.size();
  const auto space_at = [&](size_t pos, size_t length) {
    return length > 0 && u_isUWhiteSpace(static_cast<UChar32>(decode_code_point(text, pos, length)));
  };
  while (left && begin < end) {
    const size_t length = utf8_sequence_length(text, begin);
    if (!space_at(begin, length)) break;
    begin += length;
  }
  while (right && end > begin) {
    size_t start = end - 1;  // back to the first byte of the last character
    while (start > begin && (static_cast<uint8_t>(text[start]) & 0xC0) == 0x80 && end - start < 4) --start;
    const size_t length = utf8_sequence_length(text, start);
    if (length != end - start || !space_at(start, length)) break;
    end = start;
  }
  return std::string(text.substr(begin, end - begin));
}

}  // namespace kestrel::tokenizer::detail
