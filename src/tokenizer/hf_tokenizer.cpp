// HF tokenizer.json loader and BPE tokenizer.
//
// Pipeline of encode (as in the HF tokenizers library): split off added tokens on the raw
// text -> normalize each remaining segment -> pre-tokenize it into pieces -> BPE each piece.
// Decode: each token's string goes through the decoder steps; the bytes are concatenated.

#include <algorithm>
#include <array>
#include <cctype>
#include <set>
#include <unordered_map>

#include "kestrel/core/error_helpers.h"
#include "kestrel/tokenizer/tokenizer.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/hf_pipeline.h"
#include "tokenizer/token_ids.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer {
namespace {

using namespace detail::hf;  // NOLINT(google-build-using-namespace): the pipeline's own pieces

using Vocab = TokenIds;

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
    if (auto byte = detail::parse_byte_token(it.key())) byte_ids_[*byte] = id;
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
  if (type == "ByteLevel") return ok_status();  // it only adjusts offsets; it adds no tokens
  if (type != "TemplateProcessing") {
    // Others (BertProcessing, RobertaProcessing, ...) add tokens this tokenizer would not add.
    return make_error(ErrorCode::kUnsupported,
                      "{}: {}.type '{}' is not supported (supported: TemplateProcessing with at most one leading "
                      "special token, ByteLevel, Sequence)",
                      kFile, path, type);
  }
  KESTREL_ASSIGN_OR_RETURN(const json* single, require(j, path, "single"));
  if (!single->is_array()) return corrupt(path + ".single", "must be an array");
  // The template of one text: [special token]? $A. Anything else adds tokens encode() would not.
  std::vector<const json*> leading;
  bool sequence = false;
  for (size_t i = 0; i < single->size(); ++i) {
    const json& piece = (*single)[i];
    const std::string piece_path = fmt::format("{}.single[{}]", path, i);
    if (!piece.is_object()) return corrupt(piece_path, "must be an object");
    if (auto special = piece.find("SpecialToken"); special != piece.end()) {
      if (!special->is_object()) return corrupt(piece_path + ".SpecialToken", "must be an object");
      KESTREL_ASSIGN_OR_RETURN(std::string name, get_string(*special, piece_path + ".SpecialToken", "id"));
      if (sequence || !leading.empty())
        return make_error(ErrorCode::kUnsupported,
                          "{}: {} adds special token '{}' {}; only one leading special token (a bos) is supported",
                          kFile, piece_path, name, sequence ? "after the text" : "after another special token");
      leading.push_back(&*special);
    } else if (piece.contains("Sequence")) {
      if (sequence) return make_error(ErrorCode::kUnsupported, "{}: {} repeats the text sequence", kFile, piece_path);
      sequence = true;
    } else {
      return corrupt(piece_path, "must hold \"SpecialToken\" or \"Sequence\"");
    }
  }
  if (!sequence) return corrupt(path + ".single", "has no text sequence ($A)");
  if (leading.empty()) return ok_status();
  const json& first = *leading.front();
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

}  // namespace kestrel::tokenizer
