// The Unicode steps of HF normalizers, through ICU (internal): normalization forms and the
// per-character lowercase mapping of the tokenizers library.
#pragma once

#include <string>
#include <string_view>

#include "kestrel/core/result.h"

namespace kestrel::tokenizer::detail {

enum class NormalForm { kNfc, kNfd, kNfkc, kNfkd };

const char* normal_form_name(NormalForm form);

// `text` in the normalization form. Text that is not valid UTF-8 is a kInvalidArgument error:
// normalizing it would have to guess what the bytes mean.
Result<std::string> normalize_unicode(std::string_view text, NormalForm form);

// Each character replaced by its full lowercase mapping, one character at a time and without
// context (Rust's char::to_lowercase, which the tokenizers library's Lowercase uses: 'İ' becomes
// "i̇", a final 'Σ' becomes 'σ'). Invalid UTF-8 is an error as above.
Result<std::string> lowercase_unicode(std::string_view text);

// `text` without leading (left) and/or trailing (right) Unicode whitespace (the White_Space
// property, as Rust's char::is_whitespace). Bytes that are not UTF-8 are not whitespace.
std::string strip_unicode_whitespace(std::string_view text, bool left, bool right);

}  // namespace kestrel::tokenizer::detail
