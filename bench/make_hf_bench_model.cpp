// make_hf_bench_model OUT_DIR [--layers 16] [--vocab 128256] [--seed 1]: writes a random-weight
// Hugging Face checkpoint directory with the shape of Llama-3.2-1B (hidden 2048, 16 layers, 32
// heads, 8 kv heads, head_dim 64, intermediate 8192, vocab 128256, tied embeddings, llama3 rope
// scaling factor 32 / low 1 / high 4 / original 8192, rope_theta 500000) in bf16 safetensors, for
// bench/export_scale.sh. Tensors are generated and written one at a time, so the generator itself
// needs little memory even for a 2.5 GB checkpoint. Prints one JSON line describing the model.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/fixtures/checkpoint_writer.h"

namespace {

using namespace kestrel;

int usage() {
  std::fprintf(stderr, "usage: make_hf_bench_model OUT_DIR [--layers 16] [--vocab 128256] [--seed 1]\n");
  return 2;
}

int fail(const std::string& message) {
  fmt::print(stderr, "make_hf_bench_model: {}\n", message);
  return 1;
}

// Random bf16 values: uniform on [-a, a) for matrices (a = 0.02 * sqrt(3)), 1 +- 0.1 for norms.
void fill_bf16(const exporter::TensorRequirement& tensor, fixtures::SplitMix64& rng, std::vector<uint8_t>& out,
               size_t count) {
  const float scale = tensor.kind == exporter::TensorKind::kNorm ? 0.1f : 0.02f * std::sqrt(3.0f);
  const float center = tensor.kind == exporter::TensorKind::kNorm ? 1.0f : 0.0f;
  out.resize(count * 2);
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = f32_to_bf16(center + scale * rng.uniform_pm1());
    out[2 * i] = static_cast<uint8_t>(h);
    out[2 * i + 1] = static_cast<uint8_t>(h >> 8);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]).starts_with("-") || (argc - 2) % 2 != 0) return usage();
  const std::string out_dir = argv[1];
  fixtures::FixtureConfig config;
  config.architecture = "LlamaForCausalLM";
  config.hidden_size = 2048;
  config.intermediate_size = 8192;
  config.num_layers = 16;
  config.num_heads = 32;
  config.num_kv_heads = 8;
  config.head_dim = 64;
  config.vocab_size = 128256;
  config.max_position_embeddings = 131072;
  config.rope_theta = 500000;
  config.tie_word_embeddings = true;
  config.dtype = DType::kBF16;
  config.bos_id = 128000;
  config.eos_id = 128001;
  config.config_overrides = R"({"rope_scaling": {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                 "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}})";
  uint64_t seed = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    char* end = nullptr;
    const long long value = std::strtoll(argv[i + 1], &end, 10);
    if (end == argv[i + 1] || *end != '\0' || value <= 0) return usage();
    if (flag == "--layers") config.num_layers = value;
    else if (flag == "--vocab") config.vocab_size = value;
    else if (flag == "--seed") seed = static_cast<uint64_t>(value);
    else return usage();
  }

  auto config_json = fixtures::fixture_config_json(config);
  if (!config_json.ok()) return fail(config_json.error().to_string());
  auto parsed = exporter::parse_hf_config(*config_json, "", "config.json");
  if (!parsed.ok()) return fail(parsed.error().to_string());
  const std::vector<exporter::TensorRequirement> tensors = exporter::required_tensors(*parsed);

  // The safetensors header: every tensor's dtype, shape and byte range, padded to 64 bytes.
  nlohmann::ordered_json header = {{"__metadata__", {{"format", "pt"}}}};
  uint64_t offset = 0, params = 0, largest = 0;
  for (const auto& tensor : tensors) {
    uint64_t numel = 1;
    for (int64_t d : tensor.shape) numel *= static_cast<uint64_t>(d);
    header[tensor.name] = {{"dtype", "BF16"}, {"shape", tensor.shape}, {"data_offsets", {offset, offset + 2 * numel}}};
    offset += 2 * numel;
    params += numel;
    largest = std::max(largest, 2 * numel);
  }
  std::string text = header.dump();
  text.resize((8 + text.size() + 63) / 64 * 64 - 8, ' ');

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) return fail(fmt::format("cannot create '{}': {}", out_dir, ec.message()));
  std::ofstream(out_dir + "/config.json") << *config_json;
  const std::string weights_path = out_dir + "/model.safetensors";
  std::ofstream out(weights_path, std::ios::binary | std::ios::trunc);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  out.write(reinterpret_cast<const char*>(length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));

  // Each tensor in chunks of 16M values.
  constexpr size_t kChunk = size_t{1} << 24;
  std::vector<uint8_t> chunk;
  fixtures::SplitMix64 rng(seed);
  for (const auto& tensor : tensors) {
    size_t numel = 1;
    for (int64_t d : tensor.shape) numel *= static_cast<size_t>(d);
    for (size_t done = 0; done < numel; done += kChunk) {
      fill_bf16(tensor, rng, chunk, std::min(kChunk, numel - done));
      out.write(reinterpret_cast<const char*>(chunk.data()), static_cast<std::streamsize>(chunk.size()));
    }
  }
  out.close();
  if (!out) return fail(fmt::format("cannot write '{}'", weights_path));
  fmt::print("{{\"dir\": \"{}\", \"tensors\": {}, \"params\": {}, \"weights_bytes\": {}, \"largest_tensor_bytes\": {}}}\n",
             out_dir, tensors.size(), params, 8 + text.size() + offset, largest);
  return 0;
}
