// The checkpoint's tokenizer is checked at export with the parser the runner uses, so a program
// never carries a tokenizer that fails only at run time.
#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/tokenizer/tokenizer.h"

namespace kestrel::exporter::import {

Status read_checkpoint_tokenizer(Checkpoint::Impl& impl, const std::string& path, TokenizerFormat format) {
  if (format == TokenizerFormat::kNone)
    return make_error(ErrorCode::kInternal, "read_checkpoint_tokenizer needs a tokenizer format");
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, read_file_bytes(path));
  const auto parser_format =
      format == TokenizerFormat::kHfJson ? tokenizer::TokenizerFormat::kHfJson : tokenizer::TokenizerFormat::kLlama2c;
  auto checked = tokenizer::load_model_tokenizer(parser_format, bytes, impl.config.vocab_size);
  if (!checked.ok()) return checked.error().with_context(fmt::format("tokenizer '{}'", path));
  impl.tokenizer_bytes = std::move(bytes);
  impl.tokenizer_format = format;
  return ok_status();
}

}  // namespace kestrel::exporter::import
