// Internals shared by the checkpoint importers: read-only file mappings, the tensor index
// behind Checkpoint, and the safetensors header parser.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"

namespace kestrel::exporter::import {

// A whole file mapped read-only. Empty files map to an empty span.
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

// Owns every mapping of one checkpoint; handed out as Checkpoint::keepalive().
struct MappingSet {
  std::vector<std::unique_ptr<MappedFile>> files;
};

struct TensorEntry {
  std::string name;
  std::string file;        // file name for messages
  std::string raw_dtype;   // as stored ("F32", "BF16", "F64", ...)
  std::optional<DType> dtype;  // nullopt when Kestrel has no such dtype
  std::vector<int64_t> shape;
  std::span<const uint8_t> bytes;
};

}  // namespace kestrel::exporter::import

namespace kestrel::exporter {

struct Checkpoint::Impl {
  std::string source;
  ModelConfig config;
  std::map<std::string, import::TensorEntry> tensors;
  std::shared_ptr<const import::MappingSet> mappings;
  TokenizerFormat tokenizer_format = TokenizerFormat::kNone;
  std::vector<uint8_t> tokenizer_bytes;
  ChatConfig chat;
};

}  // namespace kestrel::exporter

namespace kestrel::exporter::import {

// Parses and validates a safetensors file held in `file` (the whole mapping). `label` names
// the file in errors. Entries' bytes point into `file`.
Result<std::vector<TensorEntry>> parse_safetensors(std::span<const uint8_t> file,
                                                   const std::string& label);

// Parses `text` as a JSON object; `source` names the file in errors.
Result<nlohmann::json> parse_json_object(std::string_view text, const std::string& source);

// Refuses a config whose num_hidden_layers exceeds the layers the checkpoint holds tensors for,
// before anything proportional to the layer count is built.
Status check_layer_count(const Checkpoint::Impl& impl, const std::string& config_source);

// Reads a whole small file (config, tokenizer) into memory.
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path);

// Checks that every tensor the config requires exists, is float and has the expected shape.
Status validate_required_tensors(const Checkpoint::Impl& impl);

Result<Checkpoint> load_hf_checkpoint(const std::string& dir, const CheckpointOptions& options);
Result<Checkpoint> load_llama2c_checkpoint(const std::string& path, const CheckpointOptions& options);

// Checks a llama2.c tokenizer.bin: max_token_length, then per token a float score, an int32
// length and the bytes; exactly `vocab_size` tokens. `label` names the file in errors.
Status validate_llama2c_tokenizer(std::span<const uint8_t> bytes, int64_t vocab_size,
                                  const std::string& label);

std::string shape_string(std::span<const int64_t> shape);

}  // namespace kestrel::exporter::import
