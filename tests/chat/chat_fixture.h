// A tiny Hugging Face checkpoint that chats: a byte-level BPE tokenizer with ChatML special
// tokens and a tokenizer_config.json carrying a chat template.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kestrel/export/exporter.h"
#include "kestrel/program/spec.h"

namespace kestrel::testing {

// ChatML turns; the system turn is optional; {{ bos_token }} when the caller asks for it.
inline constexpr const char* kChatmlTemplate =
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

struct ChatCheckpoint {
  std::string dir;
  int64_t bos = -1, eos = -1, im_start = -1, im_end = -1;
  int64_t vocab_size = 0;
};

// Writes the checkpoint into `dir`: config.json, generation_config.json (eos = <|end_of_text|>),
// weights, tokenizer.json, and tokenizer_config.json = `tokenizer_config` plus, unless given
// there, bos_token "<|begin_of_text|>" and eos_token "<|im_end|>".
ChatCheckpoint write_chat_checkpoint(const std::string& dir, nlohmann::ordered_json tokenizer_config);

// Loads and exports `dir` (prefill step 4, context 192).
program::ProgramSpec export_chat_program(const std::string& dir);

}  // namespace kestrel::testing
