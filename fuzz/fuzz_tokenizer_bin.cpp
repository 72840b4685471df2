// llama2.c tokenizer.bin loading, encoding and decoding. Input: tokenizer.bin, separator, text.
#include <cstdint>

#include "input_parts.h"
#include "kestrel/tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel::tokenizer;
  const auto parts = kestrel::fuzz::split_input(data, size, 2);
  const std::span<const uint8_t> bin(reinterpret_cast<const uint8_t*>(parts[0].data()), parts[0].size());
  auto tokenizer = load_llama2c_tokenizer(bin, 0);
  if (!tokenizer.ok()) return 0;
  const Tokenizer& t = **tokenizer;
  auto ids = t.encode(parts[1], true);
  if (!ids.ok()) return 0;
  for (int64_t id : *ids)
    if (id < 0 || id >= t.vocab_size()) __builtin_trap();
  (void)t.decode(*ids);
  StreamingDecoder stream(t, t.bos_id());
  for (int64_t id : *ids) (void)stream.push(id);
  (void)stream.flush();
  return 0;
}
