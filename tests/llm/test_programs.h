// Builds programs from fixture checkpoints for runner tests.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>

#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/writer.h"
#include "kestrel/runtime/method.h"

namespace kestrel::testing {

// A fresh directory under the system temp dir, removed when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::filesystem::path& path() const { return path_; }
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// Index of the largest value (the first on ties): the greedy token.
inline int64_t argmax(std::span<const float> values) {
  return static_cast<int64_t>(std::max_element(values.begin(), values.end()) - values.begin());
}

inline fixtures::FixtureConfig small_fixture() {
  fixtures::FixtureConfig config;
  config.vocab_size = 96;
  config.hidden_size = 32;
  config.intermediate_size = 48;
  config.num_layers = 2;
  config.num_heads = 4;
  config.num_kv_heads = 2;
  config.max_position_embeddings = 128;
  config.bos_id = 1;
  config.eos_id = 2;
  config.init_scale = 0.3f;
  return config;
}

// `base` as a Gemma 3 checkpoint whose every other layer slides over a window of 5 positions
// (one kv head of 8, tied embeddings).
inline fixtures::FixtureConfig gemma3_sliding(fixtures::FixtureConfig base) {
  base.architecture = "Gemma3ForCausalLM";
  base.num_kv_heads = 1;
  base.head_dim = 8;
  base.tie_word_embeddings = true;
  base.sliding_window = 5;
  base.config_overrides = R"({"sliding_window_pattern": 2})";
  return base;
}

inline exporter::ExportOptions small_export(int64_t prefill_step = 4, int64_t max_context = 48) {
  exporter::ExportOptions options;
  options.prefill_step = prefill_step;
  options.max_context = max_context;
  return options;
}

// Greedy decoding of exactly n tokens (eos does not stop it): runs compare token streams.
inline llm::GenerationConfig greedy_tokens(int64_t n) {
  llm::GenerationConfig config;
  config.max_new_tokens = n;
  config.sampler.temperature = 0;
  config.stop_at_eos = false;
  return config;
}

// Writes the fixture (HF format unless `llama2c`), exports it and returns the program spec.
program::ProgramSpec export_fixture(const fixtures::FixtureConfig& config, const exporter::ExportOptions& options,
                                    bool llama2c = false, const std::string& tokenizer_json = "");
// The HF fixture exported with `options`, or the export's error.
Result<program::ProgramSpec> try_export_fixture(const fixtures::FixtureConfig& config,
                                                const exporter::ExportOptions& options);
// Serializes, verifies and loads a spec with the portable kernels.
std::shared_ptr<runtime::Program> load_spec(const program::ProgramSpec& spec,
                                            std::shared_ptr<const runtime::BackendRegistry> backends = nullptr);

}  // namespace kestrel::testing
