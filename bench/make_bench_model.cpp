// make_bench_model OUT_DIR [options]: writes a deterministic llama2.c checkpoint (model.bin,
// shared classifier) and a llama2.c tokenizer.bin of the same vocabulary size, for the
// end-to-end comparison in bench/compare_llamacpp.sh. Prints one JSON line describing the model
// (parameter counts and the weight values a decode step reads).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: make_bench_model OUT_DIR [--dim 768] [--hidden 2048] [--layers 12] [--heads 12]\n"
               "                        [--kv-heads 12] [--vocab 32000] [--seq 1024] [--seed 1] [--init-scale 0.02]\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace kestrel;
  if (argc < 2 || std::string_view(argv[1]).starts_with("-")) return usage();
  const std::string out_dir = argv[1];
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
  if ((argc - 2) % 2 != 0) return usage();

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
