// The C++ side of kestrel.Runner: one llm::Runner, loaded with the CLI's kernels and backends
// and optionally a Python buffer allocator, used by one caller at a time.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kestrel/api/generation.h"
#include "kestrel/llm/runner.h"
#include "python_allocator.h"

namespace kestrel::python {

namespace py = pybind11;

// kestrel.GenerationConfig: the CLI's `kestrel run` settings, with the same defaults.
using GenerationSettings = api::GenerationSettings;

// One finished request, with the seed it sampled with.
struct Generation {
  llm::GenerationResult result;
  uint64_t seed = 0;
  std::optional<std::string> chat_prompt;  // chat: the rendered conversation the reply continues
  int64_t reused_tokens = 0;               // chat: cached positions of earlier turns kept
};

// Text, or token ids (no tokenizer needed).
using Prompt = std::variant<std::string, std::vector<int64_t>>;

// What one request does with the runner; runs without the GIL (it must not touch Python).
using Request = std::function<Result<Generation>(llm::Runner& runner, const llm::GenerationConfig& config,
                                                 const llm::TextCallback& on_text)>;

// A continuation of `prompt` (text or ids) after the session.
Request prompt_request(Prompt prompt);
// The assistant's reply to `messages` (a JSON list) through the program's chat template, with
// `variables` (a JSON object: tools, documents, enable_thinking, ...); keeps the cache of the
// prefix the conversation shares with the session.
Request chat_request(nlohmann::ordered_json messages, nlohmann::ordered_json variables);

class RunnerCore {
 public:
  // allocator: None (the heap), a registered allocator's name ("heap", "memfd", ...), or a
  // Python object with the hook methods (see python_allocator.h). backend_options: runtime
  // options of backends, "NAME.KEY=VALUE" (as `kestrel run --backend-option`).
  RunnerCore(const std::filesystem::path& path, const py::object& allocator, int threads, const std::string& kernels,
             const std::vector<std::string>& backend_options);
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
  Generation run(const Request& request, const GenerationSettings& settings);
  void reset();
  // Frees the runner (and the allocator's buffers) now rather than at garbage collection.
  void close();

 private:
  std::unique_ptr<llm::Runner> runner_;
  std::shared_ptr<PythonBufferAllocator> allocator_;
  bool busy_ = false;  // guarded by the GIL
};


}  // namespace kestrel::python
