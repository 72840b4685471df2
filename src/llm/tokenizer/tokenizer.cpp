#include "kestrel/llm/tokenizer.h"

#include "llm/tokenizer/utf8.h"

namespace kestrel::llm {

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

}  // namespace kestrel::llm
