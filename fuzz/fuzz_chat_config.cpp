// Reading a checkpoint's chat metadata as export does: tokenizer_config.json, chat_template.jinja,
// chat_template.json and special_tokens_map.json next to a tokenizer.json. Input: those four
// files and the tokenizer.json, separated (an empty part means the file is absent).
#include <cstdint>
#include <filesystem>

#include "input_parts.h"
#include "kestrel/export/chat_config.h"
#include "kestrel/program/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const auto parts = fuzz::split_input(data, size, 5);
  const char* names[] = {"tokenizer_config.json", "chat_template.jinja", "chat_template.json",
                         "special_tokens_map.json"};
  for (size_t i = 0; i < 4; ++i) {
    const std::string path = fuzz::scratch_dir() + "/" + names[i];
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
    if (!parts[i].empty()) fuzz::write_scratch_file(names[i], parts[i]);
  }
  const std::span<const uint8_t> tokenizer(reinterpret_cast<const uint8_t*>(parts[4].data()), parts[4].size());
  auto chat = exporter::read_chat_config(fuzz::scratch_dir(), tokenizer, {2}, 300);
  if (!chat.ok()) return 0;
  program::Metadata metadata;
  exporter::add_chat_metadata(*chat, metadata);
  return 0;
}
