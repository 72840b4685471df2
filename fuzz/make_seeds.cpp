// Writes the seed corpus of every fuzz target, made by the project's own fixture writers (no
// committed binary blobs): OUT/<target>/<name>. Usage: fuzz_make_seeds OUT SOURCE_DIR
// (SOURCE_DIR holds tests/chat/corpus, whose templates seed the template fuzzer).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "input_parts.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/export/architecture.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/program/writer.h"

namespace kestrel::fuzz {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

fs::path g_out;
int g_failures = 0;

void check(const Status& status, const std::string& what) {
  if (status.ok()) return;
  std::fprintf(stderr, "fuzz_make_seeds: %s: %s\n", what.c_str(), status.error().to_string().c_str());
  ++g_failures;
}

void write_seed(const std::string& target, const std::string& name, std::string_view bytes) {
  const fs::path dir = g_out / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string text_of(const std::vector<uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// The tiniest model that still has every part (and q8 blocks of 32): one layer, hidden 32.
fixtures::FixtureConfig tiny(const std::string& architecture = "LlamaForCausalLM") {
  fixtures::FixtureConfig config;
  config.architecture = architecture;
  config.vocab_size = 272;
  config.hidden_size = 32;
  config.intermediate_size = 32;
  config.num_layers = 1;
  config.num_heads = 2;
  config.num_kv_heads = 1;
  config.max_position_embeddings = 64;
  config.bos_id = 256;
  config.eos_id = 257;
  return config;
}

std::string bpe_tokenizer(int64_t vocab) {
  return fixtures::build_byte_level_bpe_tokenizer_json(fixtures::default_corpus(), vocab, {"<s>", "</s>", "<|im_end|>"});
}

// The byte-level tokenizer with the other pipeline components swapped in (Unicode normalizers,
// SentencePiece-style pre-tokenizers and decoders), so seeds reach every component's parser.
std::string component_tokenizer() {
  const std::string meta = "\xE2\x96\x81";
  json j = json::parse(bpe_tokenizer(300));
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "NFKC"}},
                                                  {{"type", "Lowercase"}},
                                                  {{"type", "Strip"}, {"strip_left", true}, {"strip_right", true}},
                                                  {{"type", "Prepend"}, {"prepend", meta}},
                                                  {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}})}};
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Digits"}, {"individual_digits", true}},
                                                       {{"type", "Split"},
                                                        {"pattern", {{"Regex", "\\p{P}+"}}},
                                                        {"behavior", "Isolated"}},
                                                       {{"type", "Metaspace"}, {"prepend_scheme", "first"}}})}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}},
                                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  j["model"]["byte_fallback"] = true;
  j["model"]["unk_token"] = "!";  // a byte token of the vocabulary
  return j.dump();
}

const std::vector<std::string> kTexts = {
    "The little bird sang in the rain.", "<s>hello<|im_end|> world 123", "\xEF\xAC\x81ne caf\xC3\xA9 \xE2\x91\xA0",
    "bad \xC3 utf8 \xFF", ""};

void program_seeds() {
  struct Case {
    std::string name;
    fixtures::FixtureConfig config;
    exporter::ExportOptions options;
    bool qnn = false;
  };
  std::vector<Case> cases;
  exporter::ExportOptions base;
  base.prefill_step = 4;
  base.max_context = 16;
  cases.push_back({"llama_f32", tiny(), base});
  exporter::ExportOptions q8 = base;
  q8.dtype = DType::kQ8;
  cases.push_back({"qwen3_q8", tiny("Qwen3ForCausalLM"), q8});
  exporter::ExportOptions all = base;
  all.logits = "all";
  all.dtype = DType::kF16;
  cases.push_back({"gemma3_f16_all_logits", tiny("Gemma3ForCausalLM"), all});
  cases.push_back({"llama_qnn", tiny(), base, true});
  for (Case& c : cases) {
    const fs::path dir = scratch_dir() + "/" + c.name;
    check(fixtures::write_hf_checkpoint(dir.string(), c.config, bpe_tokenizer(c.config.vocab_size)), c.name);
    auto checkpoint = exporter::load_checkpoint(dir.string());
    if (!checkpoint.ok()) {
      check(checkpoint.error(), c.name);
      continue;
    }
    if (c.qnn) {
      auto partitioner = qnn::QnnPartitioner::from_options({});
      if (!partitioner.ok()) {
        check(partitioner.error(), c.name);
        continue;
      }
      c.options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(partitioner).value()));
    }
    auto spec = exporter::export_program(*checkpoint, c.options);
    if (!spec.ok()) {
      check(spec.error(), c.name);
      continue;
    }
    auto bytes = program::serialize_program(*spec);
    if (!bytes.ok()) {
      check(bytes.error(), c.name);
      continue;
    }
    write_seed("fuzz_program", c.name + ".kst", text_of(*bytes));
  }
}

void checkpoint_seeds() {
  const fs::path single = scratch_dir() + "/single";
  check(fixtures::write_hf_checkpoint(single.string(), tiny()), "single");
  write_seed("fuzz_safetensors", "model.safetensors", std::string(1, '\0') + read_file(single / "model.safetensors"));
  fixtures::FixtureConfig sharded_config = tiny();
  sharded_config.shards = 3;
  const fs::path sharded = scratch_dir() + "/sharded";
  check(fixtures::write_hf_checkpoint(sharded.string(), sharded_config), "sharded");
  write_seed("fuzz_safetensors", "index.json", std::string(1, '\x01') + read_file(sharded / "model.safetensors.index.json"));
  fixtures::FixtureConfig bf16 = tiny();
  bf16.dtype = DType::kBF16;
  check(fixtures::write_hf_checkpoint((scratch_dir() + "/bf16"), bf16), "bf16");
  write_seed("fuzz_safetensors", "bf16.safetensors", std::string(1, '\0') + read_file(scratch_dir() + "/bf16/model.safetensors"));

  const std::string generation = R"({"bos_token_id": 256, "eos_token_id": [257, 258], "do_sample": true})";
  for (const exporter::Architecture* architecture : exporter::architectures()) {
    if (architecture->read_config == nullptr) continue;
    fixtures::FixtureConfig config = tiny(architecture->name);
    config.sliding_window = architecture->name == "MistralForCausalLM" || architecture->name == "Gemma3ForCausalLM" ? 8 : 0;
    auto text = fixtures::fixture_config_json(config);
    if (!text.ok()) {
      check(text.error(), architecture->name);
      continue;
    }
    write_seed("fuzz_hf_config", architecture->name + ".json", join_parts({*text, generation}));
  }
  fixtures::FixtureConfig scaled = tiny();
  scaled.llama3_rope_scaling = true;
  if (auto text = fixtures::fixture_config_json(scaled); text.ok())
    write_seed("fuzz_hf_config", "llama3_rope.json", join_parts({*text, ""}));

  const auto vocab = fixtures::build_llama2c_vocab(fixtures::default_corpus(), 300);
  const std::string tokenizer_bin = text_of(fixtures::build_llama2c_tokenizer_bin(vocab));
  fixtures::FixtureConfig llama2c = tiny();
  llama2c.vocab_size = static_cast<int64_t>(vocab.size());
  const std::string bin = scratch_dir() + "/model.bin";
  check(fixtures::write_llama2c_checkpoint(bin, llama2c), "llama2c");
  write_seed("fuzz_llama2c_checkpoint", "tiny.bin", join_parts({read_file(bin), tokenizer_bin}));
  llama2c.tie_word_embeddings = true;
  check(fixtures::write_llama2c_checkpoint(bin, llama2c), "llama2c tied");
  write_seed("fuzz_llama2c_checkpoint", "tied.bin", join_parts({read_file(bin), tokenizer_bin}));
}

void tokenizer_seeds() {
  for (size_t i = 0; i < kTexts.size(); ++i) {
    write_seed("fuzz_tokenizer_json", "bpe" + std::to_string(i), join_parts({bpe_tokenizer(300), kTexts[i]}));
    write_seed("fuzz_tokenizer_json", "components" + std::to_string(i), join_parts({component_tokenizer(), kTexts[i]}));
    const auto vocab = fixtures::build_llama2c_vocab(fixtures::default_corpus(), 300);
    write_seed("fuzz_tokenizer_bin", "llama2c" + std::to_string(i),
               join_parts({text_of(fixtures::build_llama2c_tokenizer_bin(vocab)), kTexts[i]}));
  }
}

void option_seeds() {
  write_seed("fuzz_options", "cli", join_parts({"soc_model=SM8650\nskip_node_op_set=index_copy,rope\nuse_fp16=true", "{}"}));
  write_seed("fuzz_options", "file",
             join_parts({"", R"({"soc_model": "SM8550", "htp_performance_mode": "burst", "skip_node_id_set": [1, 2],
                                  "profile_level": 1, "skip_mutable_buffer": true})"}));
  write_seed("fuzz_options", "both", join_parts({"precision=fp16\nshared_buffer=false", R"({"use_fp16": false})"}));
}

// Every template of the chat corpus, each with a conversation of the corpus as context.
void template_seeds(const fs::path& source) {
  const fs::path corpus = source / "tests/chat/corpus";
  json conversations = json::parse(read_file(corpus / "conversations.json"), nullptr, false);
  std::vector<std::string> contexts;
  if (conversations.is_array())
    for (const auto& c : conversations) {
      json context = {{"messages", c.value("messages", json::array())}, {"add_generation_prompt", true},
                      {"bos_token", "<s>"}, {"eos_token", "</s>"}};
      if (c.contains("tools")) context["tools"] = c["tools"];
      contexts.push_back(context.dump());
    }
  if (contexts.empty()) {
    std::fprintf(stderr, "fuzz_make_seeds: no conversations in %s\n", corpus.c_str());
    ++g_failures;
    contexts.push_back("{}");
  }
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(corpus / "templates")) {
    const std::string source_text = read_file(entry.path());
    write_seed("fuzz_chat_template", entry.path().stem().string(), join_parts({source_text, contexts[n % contexts.size()]}));
    json config = {{"chat_template", source_text}, {"bos_token", "<s>"}, {"eos_token", {{"content", "</s>"}}},
                   {"add_bos_token", true}};
    write_seed("fuzz_chat_config", entry.path().stem().string(),
               join_parts({config.dump(), n % 2 ? source_text : "", "", R"({"eos_token": "<|im_end|>"})",
                           bpe_tokenizer(300)}));
    ++n;
  }
  // The feature cases ("=== name", optional "--- context {...}", then the template).
  const std::string features = read_file(corpus / "features.txt");
  size_t pos = 0;
  while ((pos = features.find("\n=== ", pos)) != std::string::npos) {
    const size_t name_end = features.find('\n', pos + 5);
    const size_t next = features.find("\n=== ", name_end);
    std::string body = features.substr(name_end + 1, next == std::string::npos ? std::string::npos : next - name_end - 1);
    std::string context = "{}";
    if (body.rfind("--- context ", 0) == 0) {
      const size_t line_end = body.find('\n');
      context = body.substr(12, line_end - 12);
      body = body.substr(line_end + 1);
    }
    write_seed("fuzz_chat_template", "feature_" + features.substr(pos + 5, name_end - pos - 5), join_parts({body, context}));
    pos = name_end;
  }
  json listed = {{"chat_template", json::array({{{"name", "default"}, {"template", "{{ messages[0].content }}"}},
                                                {{"name", "tool_use"}, {"template", "{{ tools | tojson }}"}}})}};
  write_seed("fuzz_chat_config", "named", join_parts({listed.dump(), "", R"({"chat_template": "{{ 1 }}"})", "", ""}));
}

}  // namespace
}  // namespace kestrel::fuzz

int main(int argc, char** argv) {
  using namespace kestrel::fuzz;
  if (argc != 3) {
    std::fprintf(stderr, "usage: fuzz_make_seeds OUT_DIR SOURCE_DIR\n");
    return 2;
  }
  g_out = argv[1];
  program_seeds();
  checkpoint_seeds();
  tokenizer_seeds();
  option_seeds();
  template_seeds(argv[2]);
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(g_out)) files += entry.is_regular_file();
  std::printf("fuzz_make_seeds: %zu seeds in %s\n", files, g_out.c_str());
  return g_failures == 0 ? 0 : 1;
}
