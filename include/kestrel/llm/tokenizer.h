// The runner's tokenizers. They live in their own layer (kestrel/tokenizer) so that the exporter
// can check a checkpoint's tokenizer with the same parser the runner uses; the llm layer uses
// them under its own names.
#pragma once

#include "kestrel/tokenizer/tokenizer.h"

namespace kestrel::llm {

using tokenizer::detect_tokenizer_format;
using tokenizer::load_hf_tokenizer;
using tokenizer::load_llama2c_tokenizer;
using tokenizer::load_tokenizer;
using tokenizer::load_tokenizer_file;
using tokenizer::parse_tokenizer_format;
using tokenizer::StreamingDecoder;
using tokenizer::Tokenizer;
using tokenizer::tokenizer_format_name;
using tokenizer::TokenizerFormat;

}  // namespace kestrel::llm
