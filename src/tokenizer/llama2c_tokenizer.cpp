// llama2.c tokenizer.bin, encoded and decoded as llama2.c run.c does.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "kestrel/core/error_helpers.h"
#include "kestrel/tokenizer/tokenizer.h"
#include "tokenizer/bpe_merge.h"
#include "tokenizer/token_ids.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer {
namespace {

constexpr int64_t kBos = 1;
constexpr int64_t kEos = 2;
constexpr int64_t kMaxVocab = int64_t{1} << 22;

class Llama2cTokenizer final : public Tokenizer {
 public:
  // Reads every token of the file; with vocab_size > 0 the file must hold exactly that many.
  Status load(std::span<const uint8_t> bin, int64_t vocab_size) {
    if (vocab_size < 0 || vocab_size > kMaxVocab) {
      return make_error(ErrorCode::kInvalidArgument, "tokenizer.bin: vocab_size {} is outside [0, {}]", vocab_size,
                        kMaxVocab);
    }
    size_t pos = 0;
    const auto read = [&](void* dst, size_t n) {
      if (bin.size() - pos < n) return false;
      std::memcpy(dst, bin.data() + pos, n);
      pos += n;
      return true;
    };
    int32_t max_token_length = 0;
    if (!read(&max_token_length, sizeof(max_token_length))) {
      return make_error(ErrorCode::kCorrupt, "tokenizer.bin: {} bytes is too short for the max_token_length header",
                        bin.size());
    }
    if (max_token_length <= 0) {
      return make_error(ErrorCode::kCorrupt, "tokenizer.bin: max_token_length {} must be positive", max_token_length);
    }
    // Each token takes at least 8 bytes of the file, which bounds what a bad vocab_size can reserve.
    const size_t expected = std::min(static_cast<size_t>(vocab_size > 0 ? vocab_size : kMaxVocab), bin.size() / 8);
    pieces_.reserve(expected);
    scores_.reserve(expected);
    byte_ids_.fill(-1);
    for (int64_t id = 0; pos < bin.size(); ++id) {
      if (id >= kMaxVocab) {
        return make_error(ErrorCode::kCorrupt, "tokenizer.bin: more than {} tokens", kMaxVocab);
      }
      float score = 0;
      int32_t len = 0;
      if (!read(&score, sizeof(score)) || !read(&len, sizeof(len))) {
        return make_error(ErrorCode::kCorrupt,
                          "tokenizer.bin: truncated: token {} needs an 8-byte score and length at byte {}, but the "
                          "file has {} bytes",
                          id, pos, bin.size());
      }
      if (!std::isfinite(score)) {
        return make_error(ErrorCode::kCorrupt, "tokenizer.bin: token {} has a non-finite score", id);
      }
      if (len < 0 || len > max_token_length) {
        return make_error(ErrorCode::kCorrupt, "tokenizer.bin: token {} has length {}, outside [0, max_token_length {}]",
                          id, len, max_token_length);
      }
      if (static_cast<size_t>(len) > bin.size() - pos) {
        return make_error(ErrorCode::kCorrupt,
                          "tokenizer.bin: truncated: token {} needs {} bytes at byte {}, but the file has {} bytes",
                          id, len, pos, bin.size());
      }
      std::string piece(reinterpret_cast<const char*>(bin.data() + pos), static_cast<size_t>(len));
      pos += static_cast<size_t>(len);
      scores_.push_back(score);
      if (auto byte = detail::parse_byte_token(piece); byte && byte_ids_[*byte] < 0) byte_ids_[*byte] = id;
      lookup_.emplace(piece, id);  // the first id of a duplicated piece wins
      pieces_.push_back(std::move(piece));
    }
    if (pieces_.empty()) return make_error(ErrorCode::kCorrupt, "tokenizer.bin: the file holds no tokens");
    if (vocab_size > 0 && static_cast<int64_t>(pieces_.size()) != vocab_size) {
      return make_error(ErrorCode::kInvalidArgument, "tokenizer.bin: holds {} tokens, but the model's vocab_size is {}",
                        pieces_.size(), vocab_size);
    }
    return ok_status();
  }

  Result<std::vector<int64_t>> encode(std::string_view text, bool add_bos) const override {
    std::vector<int64_t> ids;
    if (add_bos && bos_id() >= 0) ids.push_back(kBos);
    if (text.empty()) return ids;
    std::vector<int64_t> symbols;
    symbols.reserve(text.size() + 1);
    // The dummy prefix: SentencePiece's add_dummy_prefix.
    KESTREL_RETURN_IF_ERROR(push_piece(" ", symbols));
    for (std::string_view ch : detail::split_utf8_chars(text)) KESTREL_RETURN_IF_ERROR(push_piece(ch, symbols));
    detail::merge_pairs(symbols, [this](int64_t a, int64_t b) -> std::optional<detail::MergeCandidate> {
      std::string merged = pieces_[static_cast<size_t>(a)];
      merged += pieces_[static_cast<size_t>(b)];
      auto it = lookup_.find(merged);
      if (it == lookup_.end()) return std::nullopt;
      return detail::MergeCandidate{-static_cast<double>(scores_[static_cast<size_t>(it->second)]), it->second};
    });
    ids.insert(ids.end(), symbols.begin(), symbols.end());
    return ids;
  }

  Result<std::string> token_bytes(int64_t id) const override { return render(id, false); }

  Result<std::string> piece_bytes(int64_t id, int64_t prev_id) const override {
    return render(id, prev_id < 0 || prev_id == bos_id());
  }

  int64_t vocab_size() const override { return static_cast<int64_t>(pieces_.size()); }
  int64_t bos_id() const override { return vocab_size() > kBos ? kBos : -1; }
  std::vector<int64_t> eos_ids() const override {
    if (vocab_size() > kEos) return {kEos};
    return {};
  }
  std::optional<int64_t> token_id(std::string_view piece) const override {
    auto it = lookup_.find(piece);
    if (it == lookup_.end()) return std::nullopt;
    return it->second;
  }
  bool is_special(int64_t id) const override { return id >= 0 && id <= kEos && id < vocab_size(); }

 private:
  Status push_piece(std::string_view ch, std::vector<int64_t>& symbols) const {
    if (auto it = lookup_.find(ch); it != lookup_.end()) {
      symbols.push_back(it->second);
      return ok_status();
    }
    for (char c : ch) {
      const int64_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id < 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          "cannot encode byte 0x{:02X}: no piece for it and no <0x{:02X}> byte token in tokenizer.bin",
                          static_cast<uint8_t>(c), static_cast<uint8_t>(c));
      }
      symbols.push_back(id);
    }
    return ok_status();
  }

  Result<std::string> render(int64_t id, bool strip_leading_space) const {
    if (id < 0 || id >= vocab_size()) {
      return make_error(ErrorCode::kOutOfRange, "token id {} is not in the vocabulary (size {})", id, vocab_size());
    }
    if (id == kBos || id == kEos) return std::string();  // control tokens
    std::string_view piece = pieces_[static_cast<size_t>(id)];
    if (auto byte = detail::parse_byte_token(piece)) return std::string(1, static_cast<char>(*byte));
    if (strip_leading_space && !piece.empty() && piece[0] == ' ') piece.remove_prefix(1);
    return std::string(piece);
  }

  std::vector<std::string> pieces_;
  std::vector<float> scores_;
  TokenIds lookup_;
  std::array<int64_t, 256> byte_ids_{};
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(std::span<const uint8_t> tokenizer_bin,
                                                          int64_t vocab_size) {
  try {
    auto tokenizer = std::make_unique<Llama2cTokenizer>();
    KESTREL_RETURN_IF_ERROR(tokenizer->load(tokenizer_bin, vocab_size));
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::kCapacity, "tokenizer.bin: out of memory while loading {} tokens", vocab_size);
  }
}

}  // namespace kestrel::tokenizer
