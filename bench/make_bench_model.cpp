// make_bench_model OUT_DIR [options]: writes a deterministic checkpoint for the end-to-end
// benchmarks (bench/compare_llamacpp.sh, docs/performance.md). Weights are seeded random
// values, nothing is downloaded. Two kinds:
//
//   make_bench_model OUT_DIR [--dim 768] [--hidden 2048] [--layers 12] [--heads 12] ...
//       a llama2.c checkpoint (model.bin, shared classifier) and a llama2.c tokenizer.bin of the
//       same vocabulary size: the shape llama.cpp's convert-llama2c-to-ggml also reads;
//   make_bench_model OUT_DIR --hf qwen3-0.6b | llama3.2-1b [--seed 1]
//       a Hugging Face directory (config.json, one bf16 model.safetensors, no tokenizer) with
//       the matrix shapes of a real model. The Qwen3-0.6B shape is written as a Llama
//       architecture (hidden 1024, 28 layers, 16 query heads of 128, 8 kv heads, ffn 3072,
//       vocabulary 151936, tied embeddings) without Qwen3's q/k norms: same matrices, same
//       weight stream. Llama-3.2-1B: hidden 2048, 16 layers, 32 heads of 64, 8 kv heads,
//       ffn 8192, vocabulary 128256, tied, llama3 rope scaling.
//
// Prints one JSON line describing the model (parameter counts and the weight values a decode
// step reads: every layer matrix and the classifier).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"

namespace {

using namespace kestrel;

int usage() {
  std::fprintf(stderr,
               "usage: make_bench_model OUT_DIR [--dim 768] [--hidden 2048] [--layers 12] [--heads 12]\n"
               "                        [--kv-heads 12] [--vocab 32000] [--seq 1024] [--seed 1] [--init-scale 0.02]\n"
               "       make_bench_model OUT_DIR --hf qwen3-0.6b|llama3.2-1b [--seed 1]\n");
  return 2;
}

struct HfShape {
  std::string name;
  int64_t hidden, intermediate, layers, heads, kv_heads, head_dim, vocab, max_position;
  double rope_theta, rms_norm_eps;
  bool llama3_rope;
  int64_t bos, eos;
};

const std::vector<HfShape>& hf_shapes() {
  static const std::vector<HfShape> shapes{
      {"qwen3-0.6b", 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1000000.0, 1e-6, false, 151643, 151645},
      {"llama3.2-1b", 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500000.0, 1e-5, true, 128000, 128001},
  };
  return shapes;
}

struct TensorSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool norm;  // 1 +- 0.1 instead of the matrices' +-0.02 spread
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    return n;
  }
};

// Writes the safetensors file tensor by tensor (never the whole model in memory): header
// first, then each tensor's bf16 values generated in slices.
bool write_hf_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors, uint64_t seed) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * 2;
    header[t.name] = {{"dtype", "BF16"}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((64 - (8 + text.size()) % 64) % 64, ' ');  // data starts 64-byte aligned
  std::ofstream out(path, std::ios::binary);
  const uint64_t length = text.size();
  out.write(reinterpret_cast<const char*>(&length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  std::vector<uint16_t> slice;
  for (size_t i = 0; i < tensors.size(); ++i) {
    fixtures::SplitMix64 rng(seed * 1000003 + i);
    int64_t left = tensors[i].numel();
    while (left > 0) {
      const int64_t n = std::min<int64_t>(left, 1 << 20);
      slice.resize(static_cast<size_t>(n));
      for (auto& v : slice)
        v = f32_to_bf16(tensors[i].norm ? 1.0f + 0.1f * rng.uniform_pm1() : 0.0346f * rng.uniform_pm1());
      out.write(reinterpret_cast<const char*>(slice.data()), static_cast<std::streamsize>(n * 2));
      left -= n;
    }
  }
  return static_cast<bool>(out);
}

int write_hf(const std::string& out_dir, const HfShape& s, uint64_t seed) {
  const int64_t D = s.hidden, F = s.intermediate, Dh = s.head_dim;
  std::vector<TensorSpec> tensors{{"model.embed_tokens.weight", {s.vocab, D}, false}};
  for (int64_t l = 0; l < s.layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    tensors.push_back({p + "input_layernorm.weight", {D}, true});
    tensors.push_back({p + "self_attn.q_proj.weight", {s.heads * Dh, D}, false});
    tensors.push_back({p + "self_attn.k_proj.weight", {s.kv_heads * Dh, D}, false});
    tensors.push_back({p + "self_attn.v_proj.weight", {s.kv_heads * Dh, D}, false});
    tensors.push_back({p + "self_attn.o_proj.weight", {D, s.heads * Dh}, false});
    tensors.push_back({p + "post_attention_layernorm.weight", {D}, true});
    tensors.push_back({p + "mlp.gate_proj.weight", {F, D}, false});
    tensors.push_back({p + "mlp.up_proj.weight", {F, D}, false});
    tensors.push_back({p + "mlp.down_proj.weight", {D, F}, false});
  }
  tensors.push_back({"model.norm.weight", {D}, true});

  nlohmann::ordered_json config = {{"architectures", {"LlamaForCausalLM"}},
                                   {"model_type", "llama"},
                                   {"hidden_size", D},
                                   {"intermediate_size", F},
                                   {"num_hidden_layers", s.layers},
                                   {"num_attention_heads", s.heads},
                                   {"num_key_value_heads", s.kv_heads},
                                   {"head_dim", Dh},
                                   {"vocab_size", s.vocab},
                                   {"max_position_embeddings", s.max_position},
                                   {"rms_norm_eps", s.rms_norm_eps},
                                   {"rope_theta", s.rope_theta},
                                   {"hidden_act", "silu"},
                                   {"attention_bias", false},
                                   {"mlp_bias", false},
                                   {"tie_word_embeddings", true},
                                   {"bos_token_id", s.bos},
                                   {"eos_token_id", s.eos},
                                   {"torch_dtype", "bfloat16"}};
  if (s.llama3_rope)
    config["rope_scaling"] = {{"rope_type", "llama3"},
                              {"factor", 32.0},
                              {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0},
                              {"original_max_position_embeddings", 8192}};
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  std::ofstream(out_dir + "/config.json") << config.dump(2) << "\n";
  if (!write_hf_safetensors(out_dir + "/model.safetensors", tensors, seed)) {
    fmt::print(stderr, "make_bench_model: cannot write {}/model.safetensors\n", out_dir);
    return 1;
  }
  int64_t params = 0, decode_values = 0;
  for (const auto& t : tensors) {
    params += t.numel();
    if (!t.norm && t.name != "model.embed_tokens.weight") decode_values += t.numel();
  }
  decode_values += s.vocab * D;  // the classifier: the embedding matrix, tied
  fmt::print("{{\"model\": \"{}\", \"shape\": \"{}\", \"dim\": {}, \"hidden\": {}, \"layers\": {}, \"heads\": {}, "
             "\"kv_heads\": {}, \"head_dim\": {}, \"vocab\": {}, \"params\": {}, \"decode_weight_values\": {}}}\n",
             out_dir, s.name, D, F, s.layers, s.heads, s.kv_heads, Dh, s.vocab, params, decode_values);
  return 0;
}

int write_llama2c(const std::string& out_dir, int argc, char** argv) {
  fixtures::FixtureConfig config;
  config.hidden_size = 768;
  config.intermediate_size = 2048;
  config.num_layers = 12;
  config.num_heads = 12;
  config.num_kv_heads = 12;
  config.vocab_size = 32000;
  config.max_position_embeddings = 1024;
  config.tie_word_embeddings = true;  // the usual llama2.c layout
  config.bos_id = 1;
  config.eos_id = 2;
  config.init_scale = 0.02f;
  if ((argc - 2) % 2 != 0) return usage();
  for (int i = 2; i + 1 < argc; i += 2) {
    const std::string_view flag = argv[i];
    const char* value = argv[i + 1];
    char* end = nullptr;
    const double number = std::strtod(value, &end);
    if (end == value || *end != '\0') return usage();
    if (flag == "--dim") config.hidden_size = static_cast<int64_t>(number);
    else if (flag == "--hidden") config.intermediate_size = static_cast<int64_t>(number);
    else if (flag == "--layers") config.num_layers = static_cast<int64_t>(number);
    else if (flag == "--heads") config.num_heads = static_cast<int64_t>(number);
    else if (flag == "--kv-heads") config.num_kv_heads = static_cast<int64_t>(number);
    else if (flag == "--vocab") config.vocab_size = static_cast<int64_t>(number);
    else if (flag == "--seq") config.max_position_embeddings = static_cast<int64_t>(number);
    else if (flag == "--seed") config.seed = static_cast<uint64_t>(number);
    else if (flag == "--init-scale") config.init_scale = static_cast<float>(number);
    else return usage();
  }

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  const std::string model_path = out_dir + "/model.bin";
  const std::string tokenizer_path = out_dir + "/tokenizer.bin";
  auto status = fixtures::write_llama2c_checkpoint(model_path, config);
  if (!status.ok()) {
    fmt::print(stderr, "make_bench_model: {}\n", status.error().to_string());
    return 1;
  }
  const auto vocab = fixtures::build_llama2c_vocab(fixtures::default_corpus(), config.vocab_size);
  if (static_cast<int64_t>(vocab.size()) != config.vocab_size) {
    fmt::print(stderr, "make_bench_model: the tokenizer has {} tokens, the model {}\n", vocab.size(), config.vocab_size);
    return 1;
  }
  const auto bytes = fixtures::build_llama2c_tokenizer_bin(vocab);
  std::ofstream tokenizer(tokenizer_path, std::ios::binary);
  tokenizer.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!tokenizer) {
    fmt::print(stderr, "make_bench_model: cannot write {}\n", tokenizer_path);
    return 1;
  }

  const int64_t D = config.hidden_size, F = config.intermediate_size, V = config.vocab_size;
  const int64_t kv = D / config.num_heads * config.num_kv_heads;
  const int64_t layer_matrices = D * D * 2 + D * kv * 2 + D * F * 3;
  // A decode step reads every layer matrix and the classifier (the embedding, shared); the
  // embedding lookup itself reads one row.
  const int64_t decode_values = config.num_layers * layer_matrices + V * D;
  const int64_t params = V * D + config.num_layers * (layer_matrices + 2 * D) + D;
  fmt::print("{{\"model\": \"{}\", \"tokenizer\": \"{}\", \"dim\": {}, \"hidden\": {}, \"layers\": {}, \"heads\": {}, "
             "\"kv_heads\": {}, \"vocab\": {}, \"seq\": {}, \"params\": {}, \"decode_weight_values\": {}}}\n",
             model_path, tokenizer_path, D, F, config.num_layers, config.num_heads, config.num_kv_heads, V,
             config.max_position_embeddings, params, decode_values);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]).starts_with("-")) return usage();
  const std::string out_dir = argv[1];
  if (argc >= 4 && std::string_view(argv[2]) == "--hf") {
    uint64_t seed = 1;
    if (argc == 6 && std::string_view(argv[4]) == "--seed") seed = std::strtoull(argv[5], nullptr, 10);
    else if (argc != 4) return usage();
    for (const HfShape& shape : hf_shapes())
      if (shape.name == argv[3]) return write_hf(out_dir, shape, seed);
    return usage();
  }
  return write_llama2c(out_dir, argc, argv);
}
