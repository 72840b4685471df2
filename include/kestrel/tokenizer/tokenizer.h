// Tokenizers: HF tokenizer.json (byte-level BPE and SentencePiece-style BPE with byte fallback,
// added/special tokens) and llama2.c tokenizer.bin, plus a streaming UTF-8 decoder.
//
// Every call returns errors as values; a Tokenizer is immutable after loading, so one instance
// can be shared by threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer();

  // Token ids for `text`. Added/special tokens written in the text (e.g. "<|eot_id|>") are
  // matched as whole tokens before any normalization or pre-tokenization. With add_bos the
  // bos id is prepended (nothing is prepended when the tokenizer has no bos token).
  virtual Result<std::vector<int64_t>> encode(std::string_view text, bool add_bos) const = 0;

  // Text of `ids`: the concatenation of piece_bytes(ids[i], ids[i-1]) (ids[-1] read as -1),
  // with invalid UTF-8 replaced by U+FFFD (one per maximal invalid subpart). Special tokens are
  // rendered like any other token, as HF does with skip_special_tokens=false (llama2.c's
  // <s> and </s> are control tokens and render as nothing). An id outside the vocabulary is a
  // kOutOfRange error naming it.
  virtual Result<std::string> decode(std::span<const int64_t> ids) const;

  // Raw bytes of one token as it reads in the middle of a text (may be partial UTF-8, e.g. one
  // byte-fallback token).
  virtual Result<std::string> token_bytes(int64_t id) const = 0;

  // Bytes that `id` contributes to decoded text when it follows `prev_id` (-1: at the start of
  // the text). Differs from token_bytes only where a decoder strips the leading space of a text
  // (SentencePiece-style tokenizers at the start; llama2.c at the start and after bos).
  // Default: token_bytes(id).
  virtual Result<std::string> piece_bytes(int64_t id, int64_t prev_id) const;

  // One past the largest token id.
  virtual int64_t vocab_size() const = 0;
  // -1 if none.
  virtual int64_t bos_id() const;
  // Tokens that end a generation (may be empty).
  virtual std::vector<int64_t> eos_ids() const;
  // Id of a token by its vocabulary spelling (byte-level tokens as stored, e.g. "Ġhello";
  // SentencePiece tokens with "▁"; added tokens by content).
  virtual std::optional<int64_t> token_id(std::string_view piece) const;
  // Whether `id` is a special (control) token.
  virtual bool is_special(int64_t id) const;
};

// HF tokenizer.json. Supported: model BPE (vocab, merges as "a b" strings or [a, b] pairs,
// byte_fallback, unk_token, fuse_unk, ignore_merges); normalizers Sequence, Replace, Prepend,
// Strip (Unicode whitespace), Lowercase (per-character Unicode mapping), NFC/NFD/NFKC/NFKD
// (through ICU; text given to a Unicode normalizer must be valid UTF-8); pre-tokenizers
// ByteLevel, Split (String or Regex pattern, any behavior, invert), Metaspace, Digits,
// WhitespaceSplit, Whitespace, Punctuation, Sequence; decoders ByteLevel, Replace, ByteFallback,
// Fuse, Strip (leading only), Metaspace, Sequence; post_processor TemplateProcessing whose
// single-text template is $A with at most one leading special token (that token is the bos),
// ByteLevel, Sequence. Any other post_processor adds tokens and is refused.
// Regexes run through PCRE2 with UTF and UCP. Without a template bos, a special added token
// named <|begin_of_text|>, <s>, <bos> or <|startoftext|> is the bos; eos_ids() are the special
// added tokens with conventional end names (</s>, <|end_of_text|>, <|eot_id|>, <|eom_id|>,
// <|endoftext|>, <|im_end|>, <eos>, <end_of_turn>, <|end|>, <|eos|>). An unsupported component
// type or BPE option is a kUnsupported error naming it; truncation, padding and BPE dropout
// are ignored (inference encodes whole texts, deterministically).
Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::span<const uint8_t> tokenizer_json);
Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::string_view tokenizer_json);

// llama2.c tokenizer.bin: int32 max_token_length, then per token: float score, int32 length,
// bytes (little-endian), max_token_length > 0, every length in [0, max_token_length], every
// score finite. The file must end exactly after its last token; `vocab_size` comes from the
// model config (the file does not store it) and, when not 0, must equal the token count.
// bos = 1, eos = 2; encode follows llama2.c run.c (dummy space prefix, <0xNN> byte fallback,
// greedy merges by best score). Added/special tokens are not matched inside text.
Result<std::unique_ptr<Tokenizer>> load_llama2c_tokenizer(std::span<const uint8_t> tokenizer_bin,
                                                          int64_t vocab_size);

enum class TokenizerFormat {
  kHfJson,   // HF tokenizer.json
  kLlama2c,  // llama2.c tokenizer.bin
};

// "hf_json" / "llama2c".
const char* tokenizer_format_name(TokenizerFormat format);
// Accepts "hf_json", "hf", "tokenizer.json", "llama2c", "tokenizer.bin"; anything else is a
// kInvalidArgument error listing the accepted names.
Result<TokenizerFormat> parse_tokenizer_format(std::string_view name);
// A file whose first non-blank byte is '{' is a tokenizer.json; anything else llama2.c.
TokenizerFormat detect_tokenizer_format(std::span<const uint8_t> bytes);

// Loads either format (vocab_size only matters for llama2.c, see load_llama2c_tokenizer).
Result<std::unique_ptr<Tokenizer>> load_tokenizer(TokenizerFormat format, std::span<const uint8_t> bytes,
                                                  int64_t vocab_size = 0);
// The tokenizer of a model whose logits have `model_vocab_size` entries: loads it (a llama2.c
// file must hold exactly that many tokens) and checks that every id it can produce, bos and
// eos included, is below model_vocab_size. The exporter checks a checkpoint's tokenizer with
// this before writing it into a program; the runner loads a program's tokenizer with it.
Result<std::unique_ptr<Tokenizer>> load_model_tokenizer(TokenizerFormat format, std::span<const uint8_t> bytes,
                                                        int64_t model_vocab_size);
// The largest tokenizer file read (real ones are tens of MiB).
inline constexpr uint64_t kMaxTokenizerFileBytes = uint64_t{256} << 20;

// Reads `path` (an error naming it if that fails: missing, a directory, past
// kMaxTokenizerFileBytes) and loads it in `format`, detected from the contents when not given.
Result<std::unique_ptr<Tokenizer>> load_tokenizer_file(const std::string& path,
                                                       std::optional<TokenizerFormat> format = std::nullopt,
                                                       int64_t vocab_size = 0);

// Incremental detokenizer for streaming generation. push() returns the text completed by one
// more token; a multi-byte UTF-8 character split across tokens is held back until complete.
// The concatenation of every push() and the final flush() equals tokenizer.decode(ids) (when
// constructed with prev_id = -1). The tokenizer must outlive the decoder.
class StreamingDecoder {
 public:
  // prev_id: the token that precedes the first pushed one (e.g. the last prompt token), so a
  // decoder that strips the leading space of a text does not strip it here; -1 at text start.
  explicit StreamingDecoder(const Tokenizer& tokenizer, int64_t prev_id = -1);

  // Newly completed valid UTF-8 (invalid bytes already known to be invalid come out as U+FFFD).
  // An id the tokenizer cannot render contributes U+FFFD and is recorded in status().
  std::string push(int64_t id);
  // Everything still held back; an incomplete trailing sequence becomes U+FFFD.
  std::string flush();
  // Drops held bytes and starts over, as if newly constructed.
  void reset(int64_t prev_id = -1);
  // The first error met by push(), if any.
  const Status& status() const { return status_; }

 private:
  const Tokenizer* tokenizer_;
  int64_t prev_id_;
  std::string pending_;
  Status status_;
};

}  // namespace kestrel::tokenizer
