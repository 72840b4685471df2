// tokenizer.json loading, then encoding a text (with and without bos), decoding the ids back
// all at once and streamed, and looking tokens up. Input: tokenizer.json, separator, text.
#include <cstdint>

#include "input_parts.h"
#include "kestrel/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel::tokenizer;
  const auto parts = kestrel::fuzz::split_input(data, size, 2);
  auto tokenizer = load_hf_tokenizer(parts[0]);
  if (!tokenizer.ok()) return 0;
  const Tokenizer& t = **tokenizer;
  for (bool bos : {false, true}) {
    auto ids = t.encode(parts[1], bos);
    if (!ids.ok()) continue;
    for (int64_t id : *ids)
      if (id < 0 || id >= t.vocab_size()) __builtin_trap();  // encode must stay inside the vocabulary
    (void)t.decode(*ids);
    StreamingDecoder stream(t);
    for (int64_t id : *ids) (void)stream.push(id);
    (void)stream.flush();
  }
  (void)t.token_id(parts[1]);
  (void)t.decode(std::vector<int64_t>{-1, t.vocab_size(), 0});
  return 0;
}
