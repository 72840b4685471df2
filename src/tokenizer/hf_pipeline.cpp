#include "tokenizer/hf_pipeline.h"

#include <algorithm>

#include "kestrel/core/error_helpers.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer::detail::hf {

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

bool is_ascii_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// "<0xAB>" -> 0xAB.
namespace {

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

}  // namespace

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
    NormalizerStep step = NormalizerStep::of(NormalizerStep::Kind::kNormalForm);
    step.form = type == "NFC"   ? NormalForm::kNfc
                : type == "NFD" ? NormalForm::kNfd
                : type == "NFKC" ? NormalForm::kNfkc
                                 : NormalForm::kNfkd;
    steps.push_back(std::move(step));
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
      case NormalizerStep::Kind::kStrip:
        text = strip_unicode_whitespace(text, step.strip_left, step.strip_right);
        break;
      case NormalizerStep::Kind::kLowercase: {
        KESTREL_ASSIGN_OR_RETURN(text, lowercase_unicode(text));
        break;
      }
      case NormalizerStep::Kind::kNormalForm: {
        KESTREL_ASSIGN_OR_RETURN(text, normalize_unicode(text, step.form));
        break;
      }
    }
  }
  return text;
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

}  // namespace kestrel::tokenizer::detail::hf
