#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "kestrel/core/error_helpers.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer::detail {

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

namespace {

std::string pcre2_message(int error_code) {
  PCRE2_UCHAR buffer[256];
  const int n = pcre2_get_error_message(error_code, buffer, sizeof(buffer));
  if (n < 0) return fmt::format("PCRE2 error {}", error_code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

}  // namespace

Result<Regex> Regex::compile(std::string_view pattern, bool literal) {
  uint32_t options = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF;
  if (literal) options = PCRE2_UTF | PCRE2_LITERAL | PCRE2_MATCH_INVALID_UTF;
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), options,
                                   &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "regex '{}' does not compile at offset {}: {}", pattern,
                      error_offset, pcre2_message(error_code));
  }
  auto holder = std::make_shared<Code>();
  holder->code = code;
  // JIT is an optimization only: without it (unsupported platform) matching still works.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  return Regex(std::move(holder), std::string(pattern));
}

Result<std::vector<std::pair<size_t, size_t>>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  if (text.empty()) return matches;
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> data(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), &pcre2_match_data_free);
  if (!data) return make_error(ErrorCode::kInternal, "regex '{}': out of memory for match data", pattern_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t offset = 0;
  while (offset < text.size()) {
    const int rc = pcre2_match(code_->code, subject, text.size(), offset, 0, data.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      return make_error(ErrorCode::kInternal, "regex '{}' failed at byte {}: {}", pattern_, offset, pcre2_message(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data.get());
    const size_t begin = ovector[0];
    const size_t end = ovector[1];
    if (end > begin) {
      matches.emplace_back(begin, end);
      offset = end;
    } else {
      // Empty match: step over one character (or one malformed byte) and search again.
      const size_t len = utf8_sequence_length(text, begin);
      offset = begin + (len == 0 ? 1 : len);
    }
  }
  return matches;
}

}  // namespace kestrel::tokenizer::detail
