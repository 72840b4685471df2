// llama2.c legacy checkpoints (run.c): a header of 7 int32 (dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size, seq_len; a negative vocab_size means an untied classifier follows),
// then f32 weights in a fixed order. Weights become canonical-name views into the mapping.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "export/arch/common.h"
#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"
#include "kestrel/export/architecture.h"

namespace kestrel::exporter::import {

namespace {

constexpr size_t kHeaderBytes = 7 * sizeof(int32_t);
constexpr uint32_t kVersionedMagic = 0x616b3432;  // "ak42": the newer llama2.c export formats

int32_t read_i32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// One block of the weight file: `layers` consecutive tensors of `shape` (1 for global ones).
struct Block {
  const char* label;     // llama2.c's name for the block
  std::string name;      // tensor name (per layer suffix when layered); empty: skipped
  bool layered;
  std::vector<int64_t> shape;
};

}  // namespace

Result<Checkpoint> load_llama2c_checkpoint(const std::string& path, const CheckpointOptions& options) {
  const std::string label = std::filesystem::path(path).filename().string();
  KESTREL_ASSIGN_OR_RETURN(auto mapped, MappedFile::open(path));
  const std::span<const uint8_t> file = mapped->bytes();
  if (file.size() >= 4 && static_cast<uint32_t>(read_i32(file.data())) == kVersionedMagic)
    return make_error(ErrorCode::kUnsupported,
                      "{}: a versioned llama2.c export (magic 'ak42'); only the legacy run.c "
                      "format is supported",
                      label);
  if (file.size() < kHeaderBytes)
    return make_error(ErrorCode::kCorrupt,
                      "{}: file is {} bytes, too short for the {}-byte llama2.c header", label,
                      file.size(), kHeaderBytes);
  const char* kFields[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size",
                           "seq_len"};
  int64_t h[7];
  for (int i = 0; i < 7; ++i) h[i] = read_i32(file.data() + 4 * i);
  const bool shared_classifier = h[5] > 0;
  h[5] = std::abs(h[5]);
  for (int i = 0; i < 7; ++i)
    if (h[i] <= 0)
      return make_error(ErrorCode::kCorrupt, "{}: header field {} = {} must be positive "
                        "(is this a llama2.c .bin checkpoint?)", label, kFields[i], h[i]);
  const int64_t kBounds[] = {arch::kMaxHidden, arch::kMaxIntermediate, arch::kMaxLayers, arch::kMaxHeads,
                             arch::kMaxHeads, arch::kMaxVocab, arch::kMaxPositions};
  for (int i = 0; i < 7; ++i)
    if (h[i] > kBounds[i])
      return make_error(ErrorCode::kCorrupt, "{}: header field {} = {} is implausibly large (at most {})", label,
                        kFields[i], h[i], kBounds[i]);
  ModelConfig c;
  c.architecture = "llama2c";
  c.hidden_size = h[0];
  c.intermediate_size = h[1];
  c.num_layers = h[2];
  c.num_heads = h[3];
  c.num_kv_heads = h[4];
  c.vocab_size = h[5];
  c.max_position_embeddings = h[6];
  if (c.hidden_size % c.num_heads != 0 || c.num_heads % c.num_kv_heads != 0 ||
      (c.hidden_size / c.num_heads) % 2 != 0)
    return make_error(ErrorCode::kCorrupt,
                      "{}: header dim {} / n_heads {} / n_kv_heads {} are inconsistent (dim must "
                      "split into even heads, n_heads into n_kv_heads groups)",
                      label, c.hidden_size, c.num_heads, c.num_kv_heads);
  c.head_dim = c.hidden_size / c.num_heads;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000;
  c.tie_word_embeddings = shared_classifier;
  c.attention_bias = false;
  c.hidden_act = "silu";
  c.rope_style = "interleaved";
  c.rotary_dim = c.head_dim;
  c.layers.assign(static_cast<size_t>(c.num_layers), LayerSpec{});
  c.bos_id = 1;
  c.eos_ids = {2};

  const int64_t D = c.hidden_size, H = c.intermediate_size, kv = c.num_kv_heads * c.head_dim;
  // run.c's block order, named by the architecture table (the Llama names).
  const TensorNames& n = find_architecture(c.architecture)->names;
  std::vector<Block> blocks = {
      {"token_embedding_table", n.embedding, false, {c.vocab_size, D}},
      {"rms_att_weight", n.attn_norm, true, {D}},
      {"wq", n.q + ".weight", true, {D, D}},
      {"wk", n.k + ".weight", true, {kv, D}},
      {"wv", n.v + ".weight", true, {kv, D}},
      {"wo", n.o + ".weight", true, {D, D}},
      {"rms_ffn_weight", n.ffn_norm, true, {D}},
      {"w1", n.gate + ".weight", true, {H, D}},
      {"w2", n.down + ".weight", true, {D, H}},
      {"w3", n.up + ".weight", true, {H, D}},
      {"rms_final_weight", n.final_norm, false, {D}},
      {"freq_cis_real", "", false, {c.max_position_embeddings, c.head_dim / 2}},
      {"freq_cis_imag", "", false, {c.max_position_embeddings, c.head_dim / 2}},
  };
  if (!shared_classifier) blocks.push_back({"wcls", n.lm_head, false, {c.vocab_size, D}});

  auto impl = std::make_shared<Checkpoint::Impl>();
  impl->source = path;
  impl->config = c;
  uint64_t offset = kHeaderBytes;
  for (const Block& block : blocks) {
    uint64_t bytes = sizeof(float);
    for (int64_t d : block.shape)
      if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
        return make_error(ErrorCode::kCorrupt, "{}: block {} size overflows", label, block.label);
    const int64_t count = block.layered ? c.num_layers : 1;
    for (int64_t layer = 0; layer < count; ++layer) {
      const std::string name = block.name.empty() ? std::string(block.label)
                               : block.layered    ? n.layer(layer, block.name)
                                                  : block.name;
      uint64_t end;
      if (__builtin_add_overflow(offset, bytes, &end) || end > file.size()) {
        const std::string where =
            block.layered ? fmt::format("{}, layer {}", block.label, layer) : block.label;
        return make_error(ErrorCode::kCorrupt,
                          "{}: truncated: tensor '{}' ({}) needs bytes [{}, {}) but the file has "
                          "{} bytes",
                          label, name, where, offset, offset + bytes, file.size());
      }
      if (!block.name.empty()) {
        TensorEntry entry;
        entry.name = name;
        entry.file = label;
        entry.raw_dtype = "F32";
        entry.dtype = DType::kF32;
        entry.shape = block.shape;
        entry.bytes = file.subspan(offset, bytes);
        impl->tensors.emplace(name, std::move(entry));
      }
      offset = end;
    }
  }
  if (offset < file.size())
    log(LogLevel::kWarn, "{}: {} trailing bytes after the last weight are ignored", label,
        file.size() - offset);

  if (options.tokenizer_path.empty())
    return make_error(ErrorCode::kInvalidArgument,
                      "llama2.c checkpoint '{}' needs its tokenizer.bin: pass it with --tokenizer FILE "
                      "(CheckpointOptions::tokenizer_path)",
                      path);
  const Status tokenizer = read_checkpoint_tokenizer(*impl, options.tokenizer_path, TokenizerFormat::kLlama2c);
  if (!tokenizer.ok()) return tokenizer.error().with_context("llama2.c checkpoint '" + path + "'");

  auto mappings = std::make_shared<MappingSet>();
  mappings->files.push_back(std::move(mapped));
  impl->mappings = std::move(mappings);
  KESTREL_RETURN_IF_ERROR(validate_required_tensors(*impl));
  return Checkpoint(std::move(impl));
}

}  // namespace kestrel::exporter::import
