// Pieces of the HF tokenizer.json pipeline (internal): JSON access with errors that name the
// key, and the normalizer, pre-tokenizer and decoder steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kestrel/core/result.h"
#include "tokenizer/regex.h"
#include "tokenizer/unicode_text.h"

namespace kestrel::tokenizer::detail::hf {

using json = nlohmann::json;

inline constexpr std::string_view kFile = "tokenizer.json";
// Token ids must be below this (bounds the memory a bad file can claim).
inline constexpr int64_t kMaxVocab = int64_t{1} << 22;

// ---------------------------------------------------------------------------------------------
// JSON access. `path` is the dotted location of `obj` ("model", "pre_tokenizer.pretokenizers[1]").

Error corrupt(const std::string& path, const std::string& what);
std::string type_name(const json& j);
Result<const json*> require(const json& obj, const std::string& path, const char* key);
Result<std::string> get_string(const json& obj, const std::string& path, const char* key);
Result<std::string> get_string_or(const json& obj, const std::string& path, const char* key, std::string fallback);
Result<bool> get_bool_or(const json& obj, const std::string& path, const char* key, bool fallback);
Result<int64_t> get_int_or(const json& obj, const std::string& path, const char* key, int64_t fallback);
Result<int64_t> parse_id(const json& v, const std::string& path);

bool is_ascii_space(char c);

// ---------------------------------------------------------------------------------------------
// Steps.

struct Piece {
  std::string text;
  bool at_start;  // begins at offset 0 of the original text
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

struct NormalizerStep {
  enum class Kind { kReplace, kPrepend, kStrip, kLowercase, kNormalForm } kind = Kind::kReplace;
  static NormalizerStep of(Kind k) {
    NormalizerStep s;
    s.kind = k;
    return s;
  }
  std::optional<Regex> pattern;
  std::string content;
  bool strip_left = false;
  bool strip_right = false;
  NormalForm form = NormalForm::kNfc;  // kNormalForm
};

enum class PrependScheme { kAlways, kFirst, kNever };

struct PreTokenizerStep {
  enum class Kind { kByteLevel, kSplit, kMetaspace } kind = Kind::kSplit;
  // ByteLevel
  bool add_prefix_space = false;
  // ByteLevel (use_regex) and Split
  std::optional<Regex> regex;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
  // Metaspace
  std::string replacement;
  PrependScheme prepend_scheme = PrependScheme::kAlways;
  bool split = true;
};

struct DecoderStep {
  enum class Kind { kByteLevel, kReplace, kByteFallback, kStrip, kMetaspace } kind = Kind::kByteLevel;
  static DecoderStep of(Kind k) {
    DecoderStep s;
    s.kind = k;
    return s;
  }
  std::string pattern;  // Replace: literal to replace; Metaspace: the replacement char
  std::string content;  // Replace: replacement; Strip: the char to strip
  int64_t strip_start = 0;
  bool strip_first_space = false;  // Metaspace with a prepend scheme
};

// Appends the steps of the object at `path` (null adds none; a Sequence is flattened).
Status parse_normalizer(const json& j, const std::string& path, std::vector<NormalizerStep>& steps);
Status parse_pre_tokenizer(const json& j, const std::string& path, std::vector<PreTokenizerStep>& steps);
Status parse_decoder(const json& j, const std::string& path, std::vector<DecoderStep>& steps);

Result<std::string> normalize(const std::vector<NormalizerStep>& steps, std::string text);
Status pre_tokenize(const PreTokenizerStep& step, std::vector<Piece>& pieces);
// The bytes of one token's string; at_start: the token begins the text.
std::string apply_decoders(const std::vector<DecoderStep>& steps, std::string token, bool at_start);

}  // namespace kestrel::tokenizer::detail::hf
