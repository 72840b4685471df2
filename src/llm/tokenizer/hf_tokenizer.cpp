// HF tokenizer.json loader and BPE tokenizer.
//
// Pipeline of encode (as in the HF tokenizers library): split off added tokens on the raw
// text -> normalize each remaining segment -> pre-tokenize it into pieces -> BPE each piece.
// Decode: each token's string goes through the decoder steps; the bytes are concatenated.

#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"
#include "kestrel/llm/tokenizer.h"
#include "llm/tokenizer/bpe_merge.h"
#include "llm/tokenizer/byte_level.h"
#include "llm/tokenizer/regex.h"
#include "llm/tokenizer/utf8.h"

namespace kestrel::llm {
namespace {

using json = nlohmann::json;
using detail::Regex;

constexpr int64_t kMaxVocab = int64_t{1} << 24;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int64_t, StringHash, std::equal_to<>>;
constexpr std::string_view kFile = "tokenizer.json";

// ---------------------------------------------------------------------------------------------
// JSON access with errors that name the key.

Error corrupt(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kCorrupt, "{}: {} {}", kFile, path, what);
}

std::string type_name(const json& j) { return j.type_name(); }

Result<const json*> require(const json& obj, const std::string& path, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return corrupt(path.empty() ? key : path + "." + key, "is missing");
  return &*it;
}

Result<std::string> get_string(const json& obj, const std::string& path, const char* key) {
  KESTREL_ASSIGN_OR_RETURN(const json* v, require(obj, path, key));
  if (!v->is_string()) return corrupt(path + "." + key, "must be a string, not " + type_name(*v));
  return v->get<std::string>();
}

Result<std::string> get_string_or(const json& obj, const std::string& path, const char* key, std::string fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) return corrupt(path + "." + key, "must be a string, not " + type_name(*it));
  return it->get<std::string>();
}

Result<bool> get_bool_or(const json& obj, const std::string& path, const char* key, bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) return corrupt(path + "." + key, "must be a boolean, not " + type_name(*it));
  return it->get<bool>();
}

Result<int64_t> get_int_or(const json& obj, const std::string& path, const char* key, int64_t fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_number_integer()) return corrupt(path + "." + key, "must be an integer, not " + type_name(*it));
  return it->get<int64_t>();
}

Result<int64_t> parse_id(const json& v, const std::string& path) {
  if (!v.is_number_integer()) return corrupt(path, "must be an integer id, not " + type_name(v));
  const auto id = v.get<int64_t>();
  if (id < 0 || id >= kMaxVocab) return corrupt(path, fmt::format("id {} is outside [0, {})", id, kMaxVocab));
  return id;
}

// {"String": "..."} or {"Regex": "..."}.
Result<Regex> parse_pattern(const json& obj, const std::string& path) {
  KESTREL_ASSIGN_OR_RETURN(const json* pattern, require(obj, path, "pattern"));
  const std::string ppath = path + ".pattern";
  if (!pattern->is_object()) return corrupt(ppath, "must be an object {\"String\": ...} or {\"Regex\": ...}");
  if (auto it = pattern->find("String"); it != pattern->end() && it->is_string()) {
    return Regex::compile(it->get<std::string>(), /*literal=*/true);
  }
  if (auto it = pattern->find("Regex"); it != pattern->end() && it->is_string()) {
    auto regex = Regex::compile(it->get<std::string>());
    if (!regex.ok()) return regex.error().with_context(fmt::format("{}: {}.Regex", kFile, ppath));
    return regex;
  }
  return corrupt(ppath, "must hold a \"String\" or \"Regex\" string");
}

Result<std::string> get_single_char(const json& obj, const std::string& path, const char* key, std::string fallback) {
  KESTREL_ASSIGN_OR_RETURN(std::string s, get_string_or(obj, path, key, std::move(fallback)));
  if (s.empty()) return corrupt(path + "." + key, "must not be empty");
  return s;
}

// ---------------------------------------------------------------------------------------------
// Splitting.

struct Piece {
  std::string text;
  bool at_start;  // begins at offset 0 of the original text
};

enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

Result<SplitBehavior> parse_behavior(const json& obj, const std::string& path, SplitBehavior fallback) {
  auto it = obj.find("behavior");
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_string()) return corrupt(path + ".behavior", "must be a string");
  const std::string b = it->get<std::string>();
  if (b == "Removed") return SplitBehavior::kRemoved;
  if (b == "Isolated") return SplitBehavior::kIsolated;
  if (b == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (b == "Contiguous") return SplitBehavior::kContiguous;
  return corrupt(path + ".behavior",
                 fmt::format("'{}' is unknown (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)", b));
}

struct Span {
  size_t begin;
  size_t end;
  bool delimiter;
};

// The pieces of `piece` cut at the delimiter spans `matches`, as HF's NormalizedString::split.
void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches, SplitBehavior behavior,
                 bool invert, std::vector<Piece>& out) {
  std::vector<Span> spans;
  size_t pos = 0;
  for (const auto& [b, e] : matches) {
    if (b > pos) spans.push_back({pos, b, invert});
    spans.push_back({b, e, !invert});
    pos = e;
  }
  if (pos < piece.text.size()) spans.push_back({pos, piece.text.size(), invert});

  std::vector<Span> merged;
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const Span& s : spans) {
        if (!s.delimiter) merged.push_back(s);
      }
      break;
    case SplitBehavior::kIsolated:
      merged.swap(spans);
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_delimiter = false;
      for (const Span& s : spans) {
        if (s.delimiter && !previous_delimiter && !merged.empty()) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
        previous_delimiter = s.delimiter;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool next_delimiter = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->delimiter && !next_delimiter && !merged.empty()) {
          merged.back().begin = it->begin;
        } else {
          merged.push_back(*it);
        }
        next_delimiter = it->delimiter;
      }
      std::reverse(merged.begin(), merged.end());
      break;
    }
    case SplitBehavior::kContiguous:
      for (const Span& s : spans) {
        if (s.delimiter && !merged.empty() && merged.back().delimiter) {
          merged.back().end = s.end;
        } else {
          merged.push_back(s);
        }
      }
      break;
  }
  for (const Span& s : merged) {
    if (s.end <= s.begin) continue;
    out.push_back({piece.text.substr(s.begin, s.end - s.begin), piece.at_start && s.begin == 0});
  }
}

// Occurrences of a literal (non-overlapping, left to right).
std::vector<std::pair<size_t, size_t>> find_literal(std::string_view text, std::string_view needle) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (needle.empty()) return matches;
  size_t pos = 0;
  while ((pos = text.find(needle, pos)) != std::string_view::npos) {
    matches.emplace_back(pos, pos + needle.size());
    pos += needle.size();
  }
  return matches;
}

std::string replace_spans(std::string_view text, const std::vector<std::pair<size_t, size_t>>& spans,
                          std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const auto& [b, e] : spans) {
    out.append(text.substr(pos, b - pos));
    out.append(content);
    pos = e;
  }
  out.append(text.substr(pos));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Normalizers.

struct NormalizerStep {
  enum class Kind { kReplace, kPrepend, kStrip, kLowercase } kind = Kind::kReplace;
  static NormalizerStep of(Kind k) {
    NormalizerStep s;
    s.kind = k;
    return s;
  }
  std::optional<Regex> pattern;
  std::string content;
  bool strip_left = false;
  bool strip_right = false;
};

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

Status parse_normalizer(const json& j, const std::string& path, std::vector<NormalizerStep>& steps) {
  if (j.is_null()) return ok_status();
  if (!j.is_object()) return corrupt(path, "must be an object or null");
  KESTREL_ASSIGN_OR_RETURN(std::string type, get_string(j, path, "type"));
  if (type == "Sequence") {
    KESTREL_ASSIGN_OR_RETURN(const json* list, require(j, path, "normalizers"));
    if (!list->is_array()) return corrupt(path + ".normalizers", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      KESTREL_RETURN_IF_ERROR(parse_normalizer((*list)[i], fmt::format("{}.normalizers[{}]", path, i), steps));
    }
  } else if (type == "Replace") {
    NormalizerStep step;
    step.kind = NormalizerStep::Kind::kReplace;
    KESTREL_ASSIGN_OR_RETURN(Regex pattern, parse_pattern(j, path));
    step.pattern = std::move(pattern);
    KESTREL_ASSIGN_OR_RETURN(step.content, get_string(j, path, "content"));
    steps.push_back(std::move(step));
  } else if (type == "Prepend") {
    NormalizerStep step;
    step.kind = NormalizerStep::Kind::kPrepend;
    KESTREL_ASSIGN_OR_RETURN(step.content, get_string(j, path, "prepend"));
    steps.push_back(std::move(step));
  } else if (type == "Strip") {
    NormalizerStep step;
    step.kind = NormalizerStep::Kind::kStrip;
    KESTREL_ASSIGN_OR_RETURN(step.strip_left, get_bool_or(j, path, "strip_left", true));
    KESTREL_ASSIGN_OR_RETURN(step.strip_right, get_bool_or(j, path, "strip_right", true));
    steps.push_back(std::move(step));
  } else if (type == "Lowercase") {
    steps.push_back(NormalizerStep::of(NormalizerStep::Kind::kLowercase));
  } else if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD") {
    // No Unicode normalization tables here: the text is taken as already normalized, which is
    // exact for the common case of NFC input to an NFC normalizer.
    if (type != "NFC") log(LogLevel::kDebug, "{}: normalizer {} is applied as identity", kFile, type);
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.type '{}' is not supported (supported: Sequence, Replace, Prepend, Strip, Lowercase, "
                      "NFC, NFD, NFKC, NFKD)",
                      kFile, path, type);
  }
  return ok_status();
}

Result<std::string> normalize(const std::vector<NormalizerStep>& steps, std::string text) {
  for (const NormalizerStep& step : steps) {
    switch (step.kind) {
      case NormalizerStep::Kind::kReplace: {
        KESTREL_ASSIGN_OR_RETURN(auto spans, step.pattern->find_all(text));
        if (!spans.empty()) text = replace_spans(text, spans, step.content);
        break;
      }
      case NormalizerStep::Kind::kPrepend:
        if (!text.empty()) text = step.content + text;
        break;
      case NormalizerStep::Kind::kStrip: {
        size_t b = 0, e = text.size();
        if (step.strip_left) {
          while (b < e && is_ascii_space(text[b])) ++b;
        }
        if (step.strip_right) {
          while (e > b && is_ascii_space(text[e - 1])) --e;
        }
        text = text.substr(b, e - b);
        break;
      }
      case NormalizerStep::Kind::kLowercase:
        for (char& c : text) {
          if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        break;
    }
  }
  return text;
}

// ---------------------------------------------------------------------------------------------
// Pre-tokenizers.

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

Result<PrependScheme> parse_prepend_scheme(const json& j, const std::string& path) {
  if (auto it = j.find("prepend_scheme"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return corrupt(path + ".prepend_scheme", "must be a string");
    const std::string s = it->get<std::string>();
    if (s == "always") return PrependScheme::kAlways;
    if (s == "first") return PrependScheme::kFirst;
    if (s == "never") return PrependScheme::kNever;
    return corrupt(path + ".prepend_scheme", fmt::format("'{}' is unknown (always, first, never)", s));
  }
  KESTREL_ASSIGN_OR_RETURN(bool add_prefix_space, get_bool_or(j, path, "add_prefix_space", true));
  return add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
}

Status parse_pre_tokenizer(const json& j, const std::string& path, std::vector<PreTokenizerStep>& steps) {
  if (j.is_null()) return ok_status();
  if (!j.is_object()) return corrupt(path, "must be an object or null");
  KESTREL_ASSIGN_OR_RETURN(std::string type, get_string(j, path, "type"));
  const auto split_step = [&](std::string_view pattern, SplitBehavior behavior, bool invert) -> Status {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kSplit;
    KESTREL_ASSIGN_OR_RETURN(Regex regex, Regex::compile(pattern));
    step.regex = std::move(regex);
    step.behavior = behavior;
    step.invert = invert;
    steps.push_back(std::move(step));
    return ok_status();
  };
  if (type == "Sequence") {
    KESTREL_ASSIGN_OR_RETURN(const json* list, require(j, path, "pretokenizers"));
    if (!list->is_array()) return corrupt(path + ".pretokenizers", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      KESTREL_RETURN_IF_ERROR(parse_pre_tokenizer((*list)[i], fmt::format("{}.pretokenizers[{}]", path, i), steps));
    }
  } else if (type == "ByteLevel") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kByteLevel;
    KESTREL_ASSIGN_OR_RETURN(step.add_prefix_space, get_bool_or(j, path, "add_prefix_space", false));
    KESTREL_ASSIGN_OR_RETURN(bool use_regex, get_bool_or(j, path, "use_regex", true));
    if (use_regex) {
      KESTREL_ASSIGN_OR_RETURN(Regex regex, Regex::compile(detail::kGpt2Pattern));
      step.regex = std::move(regex);
    }
    steps.push_back(std::move(step));
  } else if (type == "Split") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kSplit;
    KESTREL_ASSIGN_OR_RETURN(Regex regex, parse_pattern(j, path));
    step.regex = std::move(regex);
    KESTREL_ASSIGN_OR_RETURN(step.behavior, parse_behavior(j, path, SplitBehavior::kIsolated));
    KESTREL_ASSIGN_OR_RETURN(step.invert, get_bool_or(j, path, "invert", false));
    steps.push_back(std::move(step));
  } else if (type == "Metaspace") {
    PreTokenizerStep step;
    step.kind = PreTokenizerStep::Kind::kMetaspace;
    KESTREL_ASSIGN_OR_RETURN(step.replacement, get_single_char(j, path, "replacement", "\xE2\x96\x81"));
    KESTREL_ASSIGN_OR_RETURN(step.prepend_scheme, parse_prepend_scheme(j, path));
    KESTREL_ASSIGN_OR_RETURN(step.split, get_bool_or(j, path, "split", true));
    steps.push_back(std::move(step));
  } else if (type == "Digits") {
    KESTREL_ASSIGN_OR_RETURN(bool individual, get_bool_or(j, path, "individual_digits", false));
    KESTREL_RETURN_IF_ERROR(
        split_step(R"(\p{N})", individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous, false));
  } else if (type == "WhitespaceSplit") {
    KESTREL_RETURN_IF_ERROR(split_step(R"(\s+)", SplitBehavior::kRemoved, false));
  } else if (type == "Whitespace") {
    KESTREL_RETURN_IF_ERROR(split_step(R"(\w+|[^\w\s]+)", SplitBehavior::kRemoved, true));
  } else if (type == "Punctuation") {
    KESTREL_ASSIGN_OR_RETURN(SplitBehavior behavior, parse_behavior(j, path, SplitBehavior::kIsolated));
    KESTREL_RETURN_IF_ERROR(split_step(R"([\p{P}\x21-\x2F\x3A-\x40\x5B-\x60\x7B-\x7E])", behavior, false));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.type '{}' is not supported (supported: Sequence, ByteLevel, Split, Metaspace, Digits, "
                      "WhitespaceSplit, Whitespace, Punctuation)",
                      kFile, path, type);
  }
  return ok_status();
}

Status pre_tokenize(const PreTokenizerStep& step, std::vector<Piece>& pieces) {
  std::vector<Piece> out;
  out.reserve(pieces.size());
  switch (step.kind) {
    case PreTokenizerStep::Kind::kSplit:
      for (const Piece& piece : pieces) {
        KESTREL_ASSIGN_OR_RETURN(auto matches, step.regex->find_all(piece.text));
        split_piece(piece, matches, step.behavior, step.invert, out);
      }
      break;
    case PreTokenizerStep::Kind::kByteLevel: {
      std::vector<Piece> split;
      for (Piece& piece : pieces) {
        if (step.add_prefix_space && !piece.text.empty() && piece.text[0] != ' ') piece.text = " " + piece.text;
        if (step.regex) {
          KESTREL_ASSIGN_OR_RETURN(auto matches, step.regex->find_all(piece.text));
          split_piece(piece, matches, SplitBehavior::kIsolated, false, split);
        } else {
          split.push_back(std::move(piece));
        }
      }
      const auto& map = detail::ByteLevelMap::get();
      for (Piece& piece : split) out.push_back({map.encode(piece.text), piece.at_start});
      break;
    }
    case PreTokenizerStep::Kind::kMetaspace:
      for (const Piece& piece : pieces) {
        Piece replaced{replace_spans(piece.text, find_literal(piece.text, " "), step.replacement), piece.at_start};
        const bool prepend = step.prepend_scheme == PrependScheme::kAlways ||
                             (step.prepend_scheme == PrependScheme::kFirst && piece.at_start);
        if (prepend && !replaced.text.starts_with(step.replacement)) replaced.text = step.replacement + replaced.text;
        if (step.split) {
          split_piece(replaced, find_literal(replaced.text, step.replacement), SplitBehavior::kMergedWithNext, false,
                      out);
        } else {
          out.push_back(std::move(replaced));
        }
      }
      break;
  }
  pieces = std::move(out);
  return ok_status();
}

// ---------------------------------------------------------------------------------------------
// Decoders.

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

Status parse_decoder(const json& j, const std::string& path, std::vector<DecoderStep>& steps) {
  if (j.is_null()) return ok_status();
  if (!j.is_object()) return corrupt(path, "must be an object or null");
  KESTREL_ASSIGN_OR_RETURN(std::string type, get_string(j, path, "type"));
  if (type == "Sequence") {
    KESTREL_ASSIGN_OR_RETURN(const json* list, require(j, path, "decoders"));
    if (!list->is_array()) return corrupt(path + ".decoders", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      KESTREL_RETURN_IF_ERROR(parse_decoder((*list)[i], fmt::format("{}.decoders[{}]", path, i), steps));
    }
  } else if (type == "ByteLevel") {
    steps.push_back(DecoderStep::of(DecoderStep::Kind::kByteLevel));
  } else if (type == "ByteFallback") {
    steps.push_back(DecoderStep::of(DecoderStep::Kind::kByteFallback));
  } else if (type == "Fuse") {
    // Tokens are concatenated anyway.
  } else if (type == "Replace") {
    DecoderStep step;
    step.kind = DecoderStep::Kind::kReplace;
    KESTREL_ASSIGN_OR_RETURN(const json* pattern, require(j, path, "pattern"));
    auto it = pattern->is_object() ? pattern->find("String") : pattern->end();
    if (!pattern->is_object() || it == pattern->end() || !it->is_string()) {
      return make_error(ErrorCode::kUnsupported, "{}: {}.pattern: only {{\"String\": ...}} patterns are supported",
                        kFile, path);
    }
    step.pattern = it->get<std::string>();
    if (step.pattern.empty()) return corrupt(path + ".pattern.String", "must not be empty");
    KESTREL_ASSIGN_OR_RETURN(step.content, get_string(j, path, "content"));
    steps.push_back(std::move(step));
  } else if (type == "Strip") {
    DecoderStep step;
    step.kind = DecoderStep::Kind::kStrip;
    KESTREL_ASSIGN_OR_RETURN(step.content, get_single_char(j, path, "content", " "));
    KESTREL_ASSIGN_OR_RETURN(step.strip_start, get_int_or(j, path, "start", 0));
    KESTREL_ASSIGN_OR_RETURN(int64_t stop, get_int_or(j, path, "stop", 0));
    if (step.strip_start < 0) return corrupt(path + ".start", "must not be negative");
    if (stop != 0) {
      return make_error(ErrorCode::kUnsupported, "{}: {}.stop = {}: stripping the end of a text is not supported",
                        kFile, path, stop);
    }
    steps.push_back(std::move(step));
  } else if (type == "Metaspace") {
    DecoderStep step;
    step.kind = DecoderStep::Kind::kMetaspace;
    KESTREL_ASSIGN_OR_RETURN(step.pattern, get_single_char(j, path, "replacement", "\xE2\x96\x81"));
    KESTREL_ASSIGN_OR_RETURN(PrependScheme scheme, parse_prepend_scheme(j, path));
    step.strip_first_space = scheme != PrependScheme::kNever;
    steps.push_back(std::move(step));
  } else {
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.type '{}' is not supported (supported: Sequence, ByteLevel, ByteFallback, Fuse, "
                      "Replace, Strip, Metaspace)",
                      kFile, path, type);
  }
  return ok_status();
}

// "<0xAB>" -> 0xAB.
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

std::string apply_decoders(const std::vector<DecoderStep>& steps, std::string token, bool at_start) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel:
        if (auto bytes = detail::ByteLevelMap::get().decode(token)) token = std::move(*bytes);
        break;
      case DecoderStep::Kind::kByteFallback:
        if (auto byte = parse_byte_token(token)) token = std::string(1, static_cast<char>(*byte));
        break;
      case DecoderStep::Kind::kReplace:
        token = replace_spans(token, find_literal(token, step.pattern), step.content);
        break;
      case DecoderStep::Kind::kStrip:
        if (at_start) {
          size_t cut = 0;
          for (int64_t i = 0; i < step.strip_start && token.compare(cut, step.content.size(), step.content) == 0; ++i) {
            cut += step.content.size();
          }
          token.erase(0, cut);
        }
        break;
      case DecoderStep::Kind::kMetaspace:
        token = replace_spans(token, find_literal(token, step.pattern), " ");
        if (at_start && step.strip_first_space && !token.empty() && token[0] == ' ') token.erase(0, 1);
        break;
    }
  }
  return token;
}

// ---------------------------------------------------------------------------------------------
// Added tokens.

struct AddedToken {
  std::string content;
  int64_t id;
  bool special;
  bool lstrip;
  bool rstrip;
  bool single_word;
};

struct Segment {
  std::string_view text;
  size_t offset;
  int64_t added_id;  // -1 for text
};

bool is_word_byte(unsigned char c) { return std::isalnum(c) || c == '_' || c >= 0x80; }

// ---------------------------------------------------------------------------------------------
// The tokenizer.

class HfTokenizer final : public Tokenizer {
 public:
  Result<std::vector<int64_t>> encode(std::string_view text, bool add_bos) const override {
    std::vector<int64_t> ids;
    if (add_bos && bos_id_ >= 0) ids.push_back(bos_id_);
    for (const Segment& segment : split_added_tokens(text)) {
      if (segment.added_id >= 0) {
        ids.push_back(segment.added_id);
        continue;
      }
      KESTREL_ASSIGN_OR_RETURN(std::string normalized, normalize(normalizers_, std::string(segment.text)));
      std::vector<Piece> pieces;
      pieces.push_back({std::move(normalized), segment.offset == 0});
      for (const PreTokenizerStep& step : pre_tokenizers_) KESTREL_RETURN_IF_ERROR(pre_tokenize(step, pieces));
      for (const Piece& piece : pieces) KESTREL_RETURN_IF_ERROR(encode_word(piece.text, ids));
    }
    return ids;
  }

  Result<std::string> token_bytes(int64_t id) const override { return render(id, /*at_start=*/false); }

  Result<std::string> piece_bytes(int64_t id, int64_t prev_id) const override { return render(id, prev_id < 0); }

  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }
  int64_t bos_id() const override { return bos_id_; }
  std::vector<int64_t> eos_ids() const override { return eos_ids_; }

  std::optional<int64_t> token_id(std::string_view piece) const override {
    for (const AddedToken& t : added_) {
      if (t.content == piece) return t.id;
    }
    auto it = vocab_.find(piece);
    if (it == vocab_.end()) return std::nullopt;
    return it->second;
  }

  bool is_special(int64_t id) const override {
    return id >= 0 && id < vocab_size() && special_[static_cast<size_t>(id)] != 0;
  }

  Status load(const json& root);

 private:
  Result<std::string> render(int64_t id, bool at_start) const {
    if (id < 0 || id >= vocab_size() || !present_[static_cast<size_t>(id)]) {
      return make_error(ErrorCode::kOutOfRange, "token id {} is not in the vocabulary (size {})", id, vocab_size());
    }
    return apply_decoders(decoders_, id_to_token_[static_cast<size_t>(id)], at_start);
  }

  std::vector<Segment> split_added_tokens(std::string_view text) const {
    std::vector<Segment> segments;
    size_t text_begin = 0;  // start of the pending text segment
    size_t pos = 0;
    while (pos < text.size()) {
      const AddedToken* match = nullptr;
      for (uint32_t index : by_first_byte_[static_cast<uint8_t>(text[pos])]) {
        const AddedToken& t = added_[index];
        if (text.compare(pos, t.content.size(), t.content) != 0) continue;
        if (t.single_word) {
          const size_t end = pos + t.content.size();
          if (pos > 0 && is_word_byte(static_cast<unsigned char>(text[pos - 1]))) continue;
          if (end < text.size() && is_word_byte(static_cast<unsigned char>(text[end]))) continue;
        }
        match = &t;
        break;  // candidates are sorted longest first
      }
      if (match == nullptr) {
        ++pos;
        continue;
      }
      size_t begin = pos;
      size_t end = pos + match->content.size();
      if (match->lstrip) {
        while (begin > text_begin && is_ascii_space(text[begin - 1])) --begin;
      }
      if (match->rstrip) {
        while (end < text.size() && is_ascii_space(text[end])) ++end;
      }
      if (begin > text_begin) segments.push_back({text.substr(text_begin, begin - text_begin), text_begin, -1});
      segments.push_back({text.substr(begin, end - begin), begin, match->id});
      text_begin = end;
      pos = end;
    }
    if (text_begin < text.size()) segments.push_back({text.substr(text_begin), text_begin, -1});
    return segments;
  }

  Status encode_word(const std::string& word, std::vector<int64_t>& ids) const {
    if (word.empty()) return ok_status();
    if (ignore_merges_) {
      if (auto it = vocab_.find(word); it != vocab_.end()) {
        ids.push_back(it->second);
        return ok_status();
      }
    }
    std::vector<int64_t> symbols;
    bool last_unk = false;
    for (std::string_view ch : detail::split_utf8_chars(word)) {
      if (auto it = vocab_.find(ch); it != vocab_.end()) {
        symbols.push_back(it->second);
        last_unk = false;
        continue;
      }
      if (byte_fallback_) {
        bool all = true;
        for (char c : ch) all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
        if (all) {
          for (char c : ch) symbols.push_back(byte_ids_[static_cast<uint8_t>(c)]);
          last_unk = false;
          continue;
        }
      }
      if (unk_id_ >= 0) {
        if (!(fuse_unk_ && last_unk)) symbols.push_back(unk_id_);
        last_unk = true;
        continue;
      }
      std::string hex;
      for (char c : ch) hex += fmt::format("{:02X}", static_cast<uint8_t>(c));
      return make_error(ErrorCode::kInvalidArgument,
                        "cannot encode '{}' (bytes {}): not in model.vocab and the model has no byte_fallback "
                        "tokens or unk_token",
                        detail::utf8_lossy(ch), hex);
    }
    detail::merge_pairs(symbols, [this](int64_t a, int64_t b) -> std::optional<detail::MergeCandidate> {
      auto it = merges_.find((static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b));
      if (it == merges_.end()) return std::nullopt;
      return detail::MergeCandidate{static_cast<double>(it->second.first), it->second.second};
    });
    ids.insert(ids.end(), symbols.begin(), symbols.end());
    return ok_status();
  }

  Status load_model(const json& model);
  Status load_added_tokens(const json& root);
  Status load_post_processor(const json& j, const std::string& path);
  void set_token(int64_t id, const std::string& text, bool special);

  Vocab vocab_;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> merges_;  // (a << 32 | b) -> (rank, merged id)
  std::array<int64_t, 256> byte_ids_{};
  int64_t unk_id_ = -1;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;

  std::vector<AddedToken> added_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;
  std::vector<NormalizerStep> normalizers_;
  std::vector<PreTokenizerStep> pre_tokenizers_;
  std::vector<DecoderStep> decoders_;

  std::vector<std::string> id_to_token_;
  std::vector<uint8_t> present_;
  std::vector<uint8_t> special_;
  int64_t bos_id_ = -1;
  std::vector<int64_t> eos_ids_;
};

void HfTokenizer::set_token(int64_t id, const std::string& text, bool special) {
  const auto index = static_cast<size_t>(id);
  if (index >= id_to_token_.size()) {
    id_to_token_.resize(index + 1);
    present_.resize(index + 1, 0);
    special_.resize(index + 1, 0);
  }
  id_to_token_[index] = text;
  present_[index] = 1;
  special_[index] = special ? 1 : 0;
}

Status HfTokenizer::load_model(const json& model) {
  if (!model.is_object()) return corrupt("model", "must be an object");
  std::string type = "BPE";
  if (auto it = model.find("type"); it != model.end()) {
    if (!it->is_string()) return corrupt("model.type", "must be a string");
    type = it->get<std::string>();
  } else if (!model.contains("merges")) {
    return corrupt("model.type", "is missing");
  }
  if (type != "BPE") {
    return make_error(ErrorCode::kUnsupported, "{}: model.type '{}' is not supported (supported: BPE)", kFile, type);
  }
  KESTREL_ASSIGN_OR_RETURN(std::string prefix, get_string_or(model, "model", "continuing_subword_prefix", ""));
  KESTREL_ASSIGN_OR_RETURN(std::string suffix, get_string_or(model, "model", "end_of_word_suffix", ""));
  if (!prefix.empty() || !suffix.empty()) {
    return make_error(ErrorCode::kUnsupported,
                      "{}: model.continuing_subword_prefix / model.end_of_word_suffix are not supported", kFile);
  }
  KESTREL_ASSIGN_OR_RETURN(byte_fallback_, get_bool_or(model, "model", "byte_fallback", false));
  KESTREL_ASSIGN_OR_RETURN(fuse_unk_, get_bool_or(model, "model", "fuse_unk", false));
  KESTREL_ASSIGN_OR_RETURN(ignore_merges_, get_bool_or(model, "model", "ignore_merges", false));

  KESTREL_ASSIGN_OR_RETURN(const json* vocab, require(model, "model", "vocab"));
  if (!vocab->is_object()) return corrupt("model.vocab", "must be an object {token: id}, not " + type_name(*vocab));
  if (vocab->empty()) return corrupt("model.vocab", "is empty");
  vocab_.reserve(vocab->size());
  byte_ids_.fill(-1);
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    KESTREL_ASSIGN_OR_RETURN(int64_t id, parse_id(it.value(), fmt::format("model.vocab['{}']", it.key())));
    vocab_.emplace(it.key(), id);
    const size_t index = static_cast<size_t>(id);
    if (index < present_.size() && present_[index]) continue;  // duplicate id: keep the first spelling
    set_token(id, it.key(), false);
    if (auto byte = parse_byte_token(it.key())) byte_ids_[*byte] = id;
  }

  KESTREL_ASSIGN_OR_RETURN(std::string unk, get_string_or(model, "model", "unk_token", ""));
  if (!unk.empty()) {
    auto it = vocab_.find(unk);
    if (it == vocab_.end()) return corrupt("model.unk_token", fmt::format("'{}' is not in model.vocab", unk));
    unk_id_ = it->second;
  }

  auto merges_it = model.find("merges");
  if (merges_it == model.end() || merges_it->is_null()) return ok_status();  // a vocab-only BPE
  if (!merges_it->is_array()) return corrupt("model.merges", "must be an array");
  const json& merges = *merges_it;
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    const std::string path = fmt::format("model.merges[{}]", rank);
    std::string left, right;
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 >= s.size() || s.find(' ', space + 1) != std::string::npos) {
        return corrupt(path, fmt::format("'{}' is not two tokens separated by one space", s));
      }
      left = s.substr(0, space);
      right = s.substr(space + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      left = m[0].get<std::string>();
      right = m[1].get<std::string>();
    } else {
      return corrupt(path, "must be a string \"a b\" or a pair [\"a\", \"b\"]");
    }
    auto a = vocab_.find(left);
    auto b = vocab_.find(right);
    auto merged = vocab_.find(left + right);
    if (a == vocab_.end()) return corrupt(path, fmt::format("token '{}' is not in model.vocab", left));
    if (b == vocab_.end()) return corrupt(path, fmt::format("token '{}' is not in model.vocab", right));
    if (merged == vocab_.end()) {
      return corrupt(path, fmt::format("merged token '{}' is not in model.vocab", left + right));
    }
    const uint64_t key = (static_cast<uint64_t>(a->second) << 32) | static_cast<uint64_t>(b->second);
    merges_.emplace(key, std::make_pair(static_cast<int64_t>(rank), merged->second));  // first rank wins
  }
  return ok_status();
}

Status HfTokenizer::load_added_tokens(const json& root) {
  auto it = root.find("added_tokens");
  if (it == root.end() || it->is_null()) return ok_status();
  if (!it->is_array()) return corrupt("added_tokens", "must be an array");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& t = (*it)[i];
    const std::string path = fmt::format("added_tokens[{}]", i);
    if (!t.is_object()) return corrupt(path, "must be an object");
    AddedToken token;
    KESTREL_ASSIGN_OR_RETURN(const json* id, require(t, path, "id"));
    KESTREL_ASSIGN_OR_RETURN(token.id, parse_id(*id, path + ".id"));
    KESTREL_ASSIGN_OR_RETURN(token.content, get_string(t, path, "content"));
    KESTREL_ASSIGN_OR_RETURN(token.special, get_bool_or(t, path, "special", false));
    KESTREL_ASSIGN_OR_RETURN(token.lstrip, get_bool_or(t, path, "lstrip", false));
    KESTREL_ASSIGN_OR_RETURN(token.rstrip, get_bool_or(t, path, "rstrip", false));
    KESTREL_ASSIGN_OR_RETURN(token.single_word, get_bool_or(t, path, "single_word", false));
    if (token.content.empty()) return corrupt(path + ".content", "must not be empty");
    set_token(token.id, token.content, token.special);
    added_.push_back(std::move(token));
  }
  for (uint32_t i = 0; i < added_.size(); ++i) by_first_byte_[static_cast<uint8_t>(added_[i].content[0])].push_back(i);
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(),
                     [this](uint32_t a, uint32_t b) { return added_[a].content.size() > added_[b].content.size(); });
  }
  return ok_status();
}

Status HfTokenizer::load_post_processor(const json& j, const std::string& path) {
  if (j.is_null()) return ok_status();
  if (!j.is_object()) return corrupt(path, "must be an object or null");
  KESTREL_ASSIGN_OR_RETURN(std::string type, get_string(j, path, "type"));
  if (type == "Sequence") {
    KESTREL_ASSIGN_OR_RETURN(const json* list, require(j, path, "processors"));
    if (!list->is_array()) return corrupt(path + ".processors", "must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      KESTREL_RETURN_IF_ERROR(load_post_processor((*list)[i], fmt::format("{}.processors[{}]", path, i)));
    }
    return ok_status();
  }
  if (type != "TemplateProcessing") return ok_status();  // ByteLevel and others add no bos
  KESTREL_ASSIGN_OR_RETURN(const json* single, require(j, path, "single"));
  if (!single->is_array()) return corrupt(path + ".single", "must be an array");
  if (single->empty() || !(*single)[0].is_object() || !(*single)[0].contains("SpecialToken")) return ok_status();
  const json& first = (*single)[0]["SpecialToken"];
  KESTREL_ASSIGN_OR_RETURN(std::string name, get_string(first, path + ".single[0].SpecialToken", "id"));
  // The id is in special_tokens[name].ids, else the added token of that name.
  if (auto specials = j.find("special_tokens"); specials != j.end() && specials->is_object()) {
    if (auto entry = specials->find(name); entry != specials->end() && entry->is_object()) {
      if (auto ids = entry->find("ids"); ids != entry->end() && ids->is_array() && ids->size() == 1) {
        KESTREL_ASSIGN_OR_RETURN(bos_id_, parse_id((*ids)[0], fmt::format("{}.special_tokens['{}'].ids[0]", path, name)));
        return ok_status();
      }
    }
  }
  if (auto id = token_id(name)) {
    bos_id_ = *id;
    return ok_status();
  }
  return corrupt(path + ".single[0]", fmt::format("special token '{}' has no id", name));
}

Status HfTokenizer::load(const json& root) {
  if (!root.is_object()) return corrupt("(root)", "must be an object");
  KESTREL_ASSIGN_OR_RETURN(const json* model, require(root, "", "model"));
  KESTREL_RETURN_IF_ERROR(load_model(*model));
  KESTREL_RETURN_IF_ERROR(load_added_tokens(root));
  if (auto it = root.find("normalizer"); it != root.end()) KESTREL_RETURN_IF_ERROR(parse_normalizer(*it, "normalizer", normalizers_));
  if (auto it = root.find("pre_tokenizer"); it != root.end()) {
    KESTREL_RETURN_IF_ERROR(parse_pre_tokenizer(*it, "pre_tokenizer", pre_tokenizers_));
  }
  if (auto it = root.find("decoder"); it != root.end()) KESTREL_RETURN_IF_ERROR(parse_decoder(*it, "decoder", decoders_));
  if (auto it = root.find("post_processor"); it != root.end()) {
    KESTREL_RETURN_IF_ERROR(load_post_processor(*it, "post_processor"));
  }
  if (bos_id_ >= 0 && !(bos_id_ < vocab_size() && present_[static_cast<size_t>(bos_id_)])) {
    return corrupt("post_processor", fmt::format("bos id {} is not in the vocabulary", bos_id_));
  }

  // Without a template, a bos is recognized by its conventional name; eos tokens likewise.
  static const std::array<std::string_view, 4> kBosNames = {"<|begin_of_text|>", "<s>", "<bos>", "<|startoftext|>"};
  static const std::array<std::string_view, 10> kEosNames = {"</s>",        "<|end_of_text|>", "<|eot_id|>",
                                                             "<|eom_id|>",  "<|endoftext|>",   "<|im_end|>",
                                                             "<eos>",       "<end_of_turn>",   "<|end|>",
                                                             "<|eos|>"};
  if (bos_id_ < 0) {
    for (std::string_view name : kBosNames) {
      auto it = std::find_if(added_.begin(), added_.end(),
                             [&](const AddedToken& t) { return t.special && t.content == name; });
      if (it != added_.end()) {
        bos_id_ = it->id;
        break;
      }
    }
  }
  std::set<int64_t> eos;
  for (const AddedToken& t : added_) {
    if (t.special && std::find(kEosNames.begin(), kEosNames.end(), t.content) != kEosNames.end()) eos.insert(t.id);
  }
  eos_ids_.assign(eos.begin(), eos.end());
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::string_view tokenizer_json) {
  try {
    json root = json::parse(tokenizer_json.begin(), tokenizer_json.end());
    auto tokenizer = std::make_unique<HfTokenizer>();
    KESTREL_RETURN_IF_ERROR(tokenizer->load(root));
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  } catch (const json::parse_error& e) {
    return make_error(ErrorCode::kCorrupt, "{}: malformed JSON at byte {}: {}", kFile, e.byte, e.what());
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kCorrupt, "{}: {}", kFile, e.what());
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "{}: out of memory while loading", kFile);
  }
}

Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::span<const uint8_t> tokenizer_json) {
  return load_hf_tokenizer(
      std::string_view(reinterpret_cast<const char*>(tokenizer_json.data()), tokenizer_json.size()));
}

}  // namespace kestrel::llm
