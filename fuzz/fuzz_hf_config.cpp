// config.json and generation_config.json through the architecture table; a config that parses
// yields its tensor list (bounded by the parser's size checks).
#include <cstdint>

#include "input_parts.h"
#include "kestrel/export/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto parts = kestrel::fuzz::split_input(data, size, 2);
  auto config = kestrel::exporter::parse_hf_config(parts[0], parts[1]);
  if (!config.ok()) return 0;
  (void)kestrel::exporter::required_tensors(*config);
  return 0;
}
