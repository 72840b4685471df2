// The backend-neutral LLM runner: loads a program, picks the IOManager for its contract,
// tokenizes, generates and streams text. It names no backend.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
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
  program::LoadOptions load;                                 // e.g. skip checksum verification
};

struct GenerationConfig {
  int64_t max_new_tokens = 128;
  SamplerConfig sampler;
  std::vector<std::string> stop_strings;
  bool add_bos = true;  // prepend bos on the first turn of a session (when the model has one)
  bool stop_at_eos = true;
  // More tokens that end generation like eos (e.g. a chat template's end-of-turn tokens);
  // stop_reason "stop_token". Honoured only with stop_at_eos.
  std::vector<int64_t> stop_token_ids;
  // Called with each generated token before the next step; returning false stops the
  // generation (stop_reason "callback"). Lets a caller cancel between tokens (e.g. on Ctrl-C).
  std::function<bool(int64_t token)> on_token;
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
  std::string stop_reason;         // "eos", "stop_token", "stop_string", "max_new_tokens", "callback"
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
  // The program's metadata (chat template, ...).
  const program::Metadata& program_metadata() const;
  double load_ms() const { return load_ms_; }
  int64_t position() const { return position_; }

  // Generates from `prompt` after whatever this session already holds (multi-turn).
  // Every check (prompt ids, sampler, stop strings, capacity) runs before any side effect: a
  // request that fails one leaves the cache, position and session tokens untouched. A model
  // call that fails once generation started (a backend error, a non-finite logit) resets the
  // session as reset() does and returns the error; the runner stays usable. When on_text
  // returns false, generation stops after that token (stop_reason "callback") and the session
  // keeps every token so far, exactly as after a turn that ended for any other reason.
  Result<GenerationResult> generate(const std::string& prompt, const GenerationConfig& config,
                                    const TextCallback& on_text = nullptr);
  // The same from token ids (no tokenizer needed).
  Result<GenerationResult> generate_ids(const std::vector<int64_t>& prompt_ids, const GenerationConfig& config,
                                        const TextCallback& on_text = nullptr);
  // Generates after `context_ids`, the whole conversation so far (e.g. a rendered chat), not
  // just its new part: keeps the cache of the longest prefix these tokens share with the
  // session's tokens and prefills only the rest (everything after a reset when they share
  // none). `reused_tokens`, when given, receives how many cached positions were kept. Checks
  // the request before any side effect: on failure the session is unchanged.
  Result<GenerationResult> generate_context(const std::vector<int64_t>& context_ids, const GenerationConfig& config,
                                            const TextCallback& on_text = nullptr, int64_t* reused_tokens = nullptr);
  // Every token of the session so far: prompts and generated tokens (the last generated one
  // enters the cache with the next request).
  const std::vector<int64_t>& session_tokens() const { return history_; }
  // Clears the cache and the position: the next generate starts a new conversation.
  void reset();
  // Logits of the last model step (the next-token scores after the last processed token), a
  // view into the runner's output buffer: valid until the next generate or reset; empty
  // before the first step.
  std::span<const float> last_logits() const { return last_logits_; }

 private:
  Runner() = default;
  Result<GenerationResult> run(std::vector<int64_t> prompt_ids, const GenerationConfig& config,
                               const TextCallback& on_text);
  // The checks run() makes before its first forward call, for `feed_tokens` tokens (the
  // prompt plus a pending token) starting at `start`.
  Status check_request(int64_t start, int64_t feed_tokens, const std::vector<int64_t>& prompt_ids,
                       const GenerationConfig& config) const;

  std::shared_ptr<const runtime::Program> program_;
  std::unique_ptr<IOManager> io_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int64_t> history_;        // every token of the conversation, for repetition penalty
  std::optional<int64_t> pending_;      // sampled last turn, not yet through the model
  int64_t position_ = 0;                // tokens in the cache
  std::span<const float> last_logits_;  // of the last forward call
  double load_ms_ = 0;
};

// Peak resident set size of this process in bytes (0 when unknown).
int64_t peak_rss_bytes();

}  // namespace kestrel::llm
