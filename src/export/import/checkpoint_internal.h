// Internals shared by the checkpoint importers: read-only file mappings, the tensor index
// behind Checkpoint, and the safetensors header parser.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <memory>
#include <optional>
#include <set>
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

// model.safetensors.index.json: its weight_map {tensor: file} as file -> tensors. Every file is
// a plain name in the index's directory. `label` names the index in errors.
Result<std::map<std::string, std::set<std::string>>> parse_safetensors_index(std::string_view text,
                                                                            const std::string& label);

// Parses `text` as JSON, refusing an object with a repeated key; `source` names the file in errors.
Result<nlohmann::json> parse_json_unique_keys(std::string_view text, const std::string& source);

// Parses `text` as a JSON object (unique keys); `source` names the file in errors.
Result<nlohmann::json> parse_json_object(std::string_view text, const std::string& source);

// Refuses a config whose num_hidden_layers exceeds the layers the checkpoint holds tensors for,
// before anything proportional to the layer count is built.
Status check_layer_count(const Checkpoint::Impl& impl, const std::string& config_source);

// Reads a whole small file (config, index, tokenizer) into memory; a directory, an endless
// device or a file past kMaxSmallFileBytes is an error naming it.
inline constexpr uint64_t kMaxSmallFileBytes = uint64_t{256} << 20;
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path);

// Checks that every tensor the config requires exists, is float and has the expected shape.
Status validate_required_tensors(const Checkpoint::Impl& impl);

Result<Checkpoint> load_hf_checkpoint(const std::string& dir, const CheckpointOptions& options);
Result<Checkpoint> load_llama2c_checkpoint(const std::string& path, const CheckpointOptions& options);

// Reads the tokenizer file at `path`, checks it with the runner's parser (it must load, and
// every id it produces must fit the config's vocab_size) and keeps its bytes in `impl`.
Status read_checkpoint_tokenizer(Checkpoint::Impl& impl, const std::string& path, TokenizerFormat format);

}  // namespace kestrel::exporter::import
