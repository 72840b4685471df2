// The C++ side of kestrel.Runner: one llm::Runner, loaded with the CLI's kernels and backends
// and optionally a Python buffer allocator, used by one caller at a time.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kestrel/llm/runner.h"
#include "python_allocator.h"

namespace kestrel::python {

namespace py = pybind11;

// kestrel.GenerationConfig: the sampling and stopping settings of one request (the CLI's
// `kestrel run` flags, with the same defaults).
struct GenerationSettings {
  int64_t max_new_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  std::optional<uint64_t> seed;  // none: a random seed, reported in the result
  std::vector<std::string> stop;
  bool add_bos = true;
  bool ignore_eos = false;
};

// One finished request, with the seed it sampled with.
struct Generation {
  llm::GenerationResult result;
  uint64_t seed = 0;
};

// Text, or token ids (no tokenizer needed).
using Prompt = std::variant<std::string, std::vector<int64_t>>;

class RunnerCore {
 public:
  // allocator: None (the heap), a registered allocator's name ("heap", "memfd", ...), or a
  // Python object with the hook methods (see python_allocator.h).
  RunnerCore(const std::filesystem::path& path, const py::object& allocator, int threads, const std::string& kernels);
  ~RunnerCore();

  // The loaded runner; raises if closed. Its tokenizer and model info never change.
  llm::Runner& loaded();
  // The same, and raises if a request is running (a stream's worker may be writing it).
  llm::Runner& idle();
  // The same, and marks it busy until release(): one request at a time, whatever the thread.
  llm::Runner& acquire();
  void release();

  // Runs a request with the GIL released; a signal (Ctrl-C) raises its exception between
  // tokens and leaves the runner usable.
  Generation generate(const Prompt& prompt, const GenerationSettings& settings);
  void reset();
  // Frees the runner (and the allocator's buffers) now rather than at garbage collection.
  void close();

 private:
  std::unique_ptr<llm::Runner> runner_;
  std::shared_ptr<PythonBufferAllocator> allocator_;
  bool busy_ = false;  // guarded by the GIL
};

// The llm config for `settings`; `seed` receives the seed it samples with.
llm::GenerationConfig generation_config(const GenerationSettings& settings, uint64_t& seed);
// Runs `prompt` (text or ids) on `runner`.
Result<llm::GenerationResult> run_prompt(llm::Runner& runner, const Prompt& prompt,
                                         const llm::GenerationConfig& config, const llm::TextCallback& on_text);

}  // namespace kestrel::python
