// The backend-neutral LLM runner: loads a program, picks the IOManager for its contract,
// tokenizes, generates and streams text. It names no backend.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/llm/io_manager.h"
#include "kestrel/llm/sampler.h"
#include "kestrel/llm/tokenizer.h"
#include "kestrel/runtime/backend.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::llm {

struct RunnerOptions {
  std::shared_ptr<const runtime::KernelRegistry> kernels;    // default: portable kernels
  std::shared_ptr<const runtime::BackendRegistry> backends;  // default: none
  std::string allocator = "heap";                            // a registered buffer allocator
  std::shared_ptr<runtime::BufferAllocator> allocator_instance;  // overrides `allocator` when set
  const IOManagerRegistry* io_managers = nullptr;            // default: the global registry
};

struct GenerationConfig {
  int64_t max_new_tokens = 128;
  SamplerConfig sampler;
  std::vector<std::string> stop_strings;
  bool add_bos = true;  // prepend bos on the first turn of a session (when the model has one)
  bool stop_at_eos = true;
};

struct GenerationStats {
  double load_ms = 0;
  double ttft_ms = 0;  // from the start of generate to the first sampled token
  double prefill_tokens_per_s = 0;
  double decode_tokens_per_s = 0;
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;
  int64_t peak_rss_bytes = 0;
  // Bytes the IOManager copied into the KV caches per decode step of this request (0 when the
  // program updates its caches in place), as counted where the copy happens.
  double cache_bytes_copied_per_decode_step = 0;
};

struct GenerationResult {
  std::string text;
  std::vector<int64_t> prompt_token_ids;
  std::vector<int64_t> token_ids;  // generated
  std::string stop_reason;         // "eos", "stop_string", "max_new_tokens"
  GenerationStats stats;
};

// Receives text as it becomes valid UTF-8; return false to stop generation.
using TextCallback = std::function<bool(const std::string& piece)>;

class Runner {
 public:
  static Result<std::unique_ptr<Runner>> load(const std::string& path, const RunnerOptions& options = {});
  static Result<std::unique_ptr<Runner>> from_program(std::shared_ptr<const runtime::Program> program,
                                                      const RunnerOptions& options = {});

  const ModelInfo& model_info() const { return io_->model_info(); }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }
  IOManager& io_manager() { return *io_; }
  double load_ms() const { return load_ms_; }
  int64_t position() const { return position_; }

  // Generates from `prompt` after whatever this session already holds (multi-turn).
  // Checks capacity before any side effect: on failure the cache and position are untouched.
  Result<GenerationResult> generate(const std::string& prompt, const GenerationConfig& config,
                                    const TextCallback& on_text = nullptr);
  // The same from token ids (no tokenizer needed).
  Result<GenerationResult> generate_ids(const std::vector<int64_t>& prompt_ids, const GenerationConfig& config,
                                        const TextCallback& on_text = nullptr);
  // Clears the cache and the position: the next generate starts a new conversation.
  void reset();

 private:
  Runner() = default;
  Result<GenerationResult> run(std::vector<int64_t> prompt_ids, const GenerationConfig& config,
                               const TextCallback& on_text);

  std::shared_ptr<const runtime::Program> program_;
  std::unique_ptr<IOManager> io_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> history_;        // every token of the conversation, for repetition penalty
  std::optional<int64_t> pending_;      // sampled last turn, not yet through the model
  int64_t position_ = 0;                // tokens in the cache
  double load_ms_ = 0;
};

// Peak resident set size of this process in bytes (0 when unknown).
int64_t peak_rss_bytes();

}  // namespace kestrel::llm
