#include "kestrel/tokenizer/tokenizer.h"


#include "kestrel/core/error_helpers.h"
#include "kestrel/core/file.h"
#include "tokenizer/utf8.h"

namespace kestrel::tokenizer {

Tokenizer::~Tokenizer() = default;

Result<std::string> Tokenizer::decode(std::span<const int64_t> ids) const {
  std::string bytes;
  int64_t prev = -1;
  for (int64_t id : ids) {
    KESTREL_ASSIGN_OR_RETURN(std::string piece, piece_bytes(id, prev));
    bytes += piece;
    prev = id;
  }
  return detail::utf8_lossy(bytes);
}

Result<std::string> Tokenizer::piece_bytes(int64_t id, int64_t /*prev_id*/) const { return token_bytes(id); }

int64_t Tokenizer::bos_id() const { return -1; }

std::vector<int64_t> Tokenizer::eos_ids() const { return {}; }

std::optional<int64_t> Tokenizer::token_id(std::string_view /*piece*/) const { return std::nullopt; }

bool Tokenizer::is_special(int64_t /*id*/) const { return false; }

const char* tokenizer_format_name(TokenizerFormat format) {
  switch (format) {
    case TokenizerFormat::kHfJson: return "hf_json";
    case TokenizerFormat::kLlama2c: return "llama2c";
  }
  return "unknown";
}

Result<TokenizerFormat> parse_tokenizer_format(std::string_view name) {
  if (name == "hf_json" || name == "hf" || name == "tokenizer.json") return TokenizerFormat::kHfJson;
  if (name == "llama2c" || name == "tokenizer.bin") return TokenizerFormat::kLlama2c;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown tokenizer format '{}' (known: hf_json, hf, tokenizer.json, llama2c, tokenizer.bin)", name);
}

TokenizerFormat detect_tokenizer_format(std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) {
    if (b == ' ' || b == '\t' || b == '\n' || b == '\r') continue;
    return b == '{' ? TokenizerFormat::kHfJson : TokenizerFormat::kLlama2c;
  }
  return TokenizerFormat::kLlama2c;
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer(TokenizerFormat format, std::span<const uint8_t> bytes,
                                                  int64_t vocab_size) {
  switch (format) {
    case TokenizerFormat::kHfJson: return load_hf_tokenizer(bytes);
    case TokenizerFormat::kLlama2c: return load_llama2c_tokenizer(bytes, vocab_size);
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown tokenizer format {}", static_cast<int>(format));
}

Result<std::unique_ptr<Tokenizer>> load_model_tokenizer(TokenizerFormat format, std::span<const uint8_t> bytes,
                                                        int64_t model_vocab_size) {
  if (model_vocab_size < 1)
    return make_error(ErrorCode::kInvalidArgument, "the model's vocabulary size {} must be >= 1", model_vocab_size);
  KESTREL_ASSIGN_OR_RETURN(auto tokenizer, load_tokenizer(format, bytes, model_vocab_size));
  if (tokenizer->vocab_size() > model_vocab_size)
    return make_error(ErrorCode::kInvalidArgument,
                      "the {} tokenizer has ids up to {} but the model's vocabulary is {} (ids 0..{})",
                      tokenizer_format_name(format), tokenizer->vocab_size() - 1, model_vocab_size,
                      model_vocab_size - 1);
  return tokenizer;
}

Result<std::unique_ptr<Tokenizer>> load_tokenizer_file(const std::string& path, std::optional<TokenizerFormat> format,
                                                       int64_t vocab_size) {
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bytes(path, kMaxTokenizerFileBytes, "tokenizer file"));
  const TokenizerFormat f = format ? *format : detect_tokenizer_format(bytes);
  auto tokenizer = load_tokenizer(f, bytes, vocab_size);
  if (!tokenizer.ok()) return tokenizer.error().with_context(path);
  return tokenizer;
}

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, int64_t prev_id)
    : tokenizer_(&tokenizer), prev_id_(prev_id) {}

std::string StreamingDecoder::push(int64_t id) {
  auto piece = tokenizer_->piece_bytes(id, prev_id_);
  prev_id_ = id;
  std::string out;
  if (!piece.ok()) {
    if (status_.ok()) status_ = piece.error();
    // Whatever was held cannot be completed by a token that did not render.
    detail::append_utf8_lossy(pending_, true, out);
    pending_.clear();
    out.append(detail::kReplacementChar);
    return out;
  }
  pending_ += *piece;
  const size_t consumed = detail::append_utf8_lossy(pending_, false, out);
  pending_.erase(0, consumed);
  return out;
}

std::string StreamingDecoder::flush() {
  std::string out;
  detail::append_utf8_lossy(pending_, true, out);
  pending_.clear();
  return out;
}

void StreamingDecoder::reset(int64_t prev_id) {
  prev_id_ = prev_id;
  pending_.clear();
  status_ = Status();
}

}  // namespace kestrel::tokenizer
