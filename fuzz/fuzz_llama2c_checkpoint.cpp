// A llama2.c checkpoint with its tokenizer.bin, loaded as `kestrel export model.bin --tokenizer
// tokenizer.bin` loads them; each tensor the loader accepts is converted (its bytes must lie in
// the file). Input: model.bin, separator, tokenizer.bin.
#include <cstdint>

#include "input_parts.h"
#include "kestrel/export/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const auto parts = fuzz::split_input(data, size, 2);
  exporter::CheckpointOptions options;
  options.tokenizer_path = fuzz::write_scratch_file("tokenizer.bin", parts[1]);
  auto checkpoint = exporter::load_checkpoint(fuzz::write_scratch_file("model.bin", parts[0]), options);
  if (!checkpoint.ok()) return 0;
  for (const std::string& name : checkpoint->tensor_names()) {
    auto tensor = checkpoint->tensor(name);
    if (tensor.ok()) (void)exporter::convert_tensor(*tensor, DType::kF16);
  }
  return 0;
}
