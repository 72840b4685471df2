// The safetensors header parser and the sharded index (model.safetensors.index.json). The first
// byte picks which: even, a whole safetensors file; odd, an index.
#include <cstdint>

#include "export/import/checkpoint_internal.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel::exporter::import;
  if (size == 0) return 0;
  const std::span<const uint8_t> rest(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto entries = parse_safetensors(rest, "model.safetensors");
    if (!entries.ok()) return 0;
    // Every entry's bytes lie inside the file: touch them (ASan checks the bounds).
    uint8_t sum = 0;
    for (const TensorEntry& entry : *entries)
      for (uint8_t b : entry.bytes) sum ^= b;
    volatile uint8_t sink = sum;
    (void)sink;
  } else {
    (void)parse_safetensors_index(std::string_view(reinterpret_cast<const char*>(rest.data()), rest.size()),
                                  "model.safetensors.index.json");
  }
  return 0;
}
