#include "kestrel/llm/runner.h"

#include <sys/resource.h>

#include <algorithm>
#include <chrono>

#include "kestrel/core/error_helpers.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/llm/stop_strings.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::llm {

namespace keys = contract::hf_static;

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// The tokenizer embedded in the program, or null when the program carries none.
Result<std::unique_ptr<Tokenizer>> load_embedded_tokenizer(const runtime::Program& program, int64_t vocab_size) {
  const auto& meta = program.metadata();
  auto format_it = meta.find(keys::kTokenizerFormat);
  if (format_it == meta.end()) return std::unique_ptr<Tokenizer>();
  if (!std::holds_alternative<std::string>(format_it->second))
    return make_error(ErrorCode::kInvalidArgument, "metadata '{}' must be a string (hf_json, llama2c or none)",
                      keys::kTokenizerFormat);
  const std::string& format = std::get<std::string>(format_it->second);
  if (format == "none") return std::unique_ptr<Tokenizer>();
  if (format != "hf_json" && format != "llama2c")
    return make_error(ErrorCode::kUnsupported, "metadata '{}' = '{}' (known: hf_json, llama2c, none)",
                      keys::kTokenizerFormat, format);
  auto segment_it = meta.find(keys::kTokenizerSegment);
  if (segment_it == meta.end() || !std::holds_alternative<int64_t>(segment_it->second))
    return make_error(ErrorCode::kInvalidArgument, "metadata '{}' is missing or not an integer",
                      keys::kTokenizerSegment);
  const int64_t segment = std::get<int64_t>(segment_it->second);
  if (segment < 0 || static_cast<size_t>(segment) >= program.loaded().num_segments())
    return make_error(ErrorCode::kOutOfRange, "metadata '{}' = {} but the program has {} segments",
                      keys::kTokenizerSegment, segment, program.loaded().num_segments());
  const auto bytes = program.loaded().segment(static_cast<uint32_t>(segment));
  auto tokenizer = tokenizer::load_model_tokenizer(
      format == "hf_json" ? TokenizerFormat::kHfJson : TokenizerFormat::kLlama2c, bytes, vocab_size);
  if (!tokenizer.ok()) return tokenizer.error().with_context("loading the program's tokenizer");
  return tokenizer;
}

}  // namespace

int64_t peak_rss_bytes() {
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) != 0) return 0;
  return static_cast<int64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
}

Result<std::unique_ptr<Runner>> Runner::load(const std::string& path, const RunnerOptions& options) {
  const auto start = Clock::now();
  auto kernels = options.kernels ? options.kernels : kernels::portable_kernel_registry();
  auto program = runtime::Program::load(path, kernels, options.backends, options.load);
  if (!program.ok()) return program.error().with_context(path);
  KESTREL_ASSIGN_OR_RETURN(auto runner, from_program(*program, options));
  runner->load_ms_ = ms_since(start);
  return runner;
}

Result<std::unique_ptr<Runner>> Runner::from_program(std::shared_ptr<const runtime::Program> program,
                                                     const RunnerOptions& options) {
  const auto start = Clock::now();
  const IOManagerRegistry& registry = options.io_managers ? *options.io_managers : IOManagerRegistry::global();
  KESTREL_ASSIGN_OR_RETURN(auto io, registry.create_for(*program));
  std::shared_ptr<runtime::BufferAllocator> allocator = options.allocator_instance;
  if (!allocator) {
    KESTREL_ASSIGN_OR_RETURN(auto made, runtime::make_buffer_allocator(options.allocator));
    allocator = std::move(made);
  }
  KESTREL_RETURN_IF_ERROR(io->load(program, allocator));
  std::unique_ptr<Runner> runner(new Runner());
  KESTREL_ASSIGN_OR_RETURN(runner->tokenizer_, load_embedded_tokenizer(*program, io->model_info().vocab_size));
  runner->program_ = std::move(program);
  runner->io_ = std::move(io);
  runner->load_ms_ = ms_since(start);
  return runner;
}

const program::Metadata& Runner::program_metadata() const { return program_->metadata(); }

void Runner::reset() {
  io_->reset();
  history_.clear();
  pending_.reset();
  position_ = 0;
  last_logits_ = {};
}

Result<GenerationResult> Runner::generate(const std::string& prompt, const GenerationConfig& config,
                                          const TextCallback& on_text) {
  if (!tokenizer_)
    return make_error(ErrorCode::kUnsupported,
                      "this program carries no tokenizer: generate from token ids instead (Runner::generate_ids; "
                      "kestrel run --prompt-ids)");
  const bool bos = config.add_bos && position_ == 0 && model_info().bos_id >= 0;
  KESTREL_ASSIGN_OR_RETURN(auto ids, tokenizer_->encode(prompt, bos));
  return run(std::move(ids), config, on_text);
}

Result<GenerationResult> Runner::generate_ids(const std::vector<int64_t>& prompt_ids, const GenerationConfig& config,
                                              const TextCallback& on_text) {
  return run(prompt_ids, config, on_text);
}

Status Runner::check_request(int64_t start, int64_t feed_tokens, const std::vector<int64_t>& prompt_ids,
                             const GenerationConfig& config) const {
  const ModelInfo& info = model_info();
  if (prompt_ids.empty())
    return make_error(ErrorCode::kInvalidArgument, "the prompt is empty (no tokens to process)");
  if (config.max_new_tokens < 0)
    return make_error(ErrorCode::kInvalidArgument, "max new tokens must be >= 0, got {}", config.max_new_tokens);
  KESTREL_RETURN_IF_ERROR(config.sampler.validate());
  for (size_t i = 0; i < config.stop_strings.size(); ++i)
    if (config.stop_strings[i].empty())
      return make_error(ErrorCode::kInvalidArgument, "stop string {} is empty (it would match everywhere)", i + 1);
  for (int64_t id : prompt_ids)
    if (id < 0 || id >= info.vocab_size)
      return make_error(ErrorCode::kInvalidArgument, "prompt token id {} is outside the vocabulary [0, {})", id,
                        info.vocab_size);
  // The last sampled token is never fed back, so n new tokens need n - 1 further positions.
  // Summed in 64 unsigned bits: max_new_tokens may be as large as INT64_MAX.
  const uint64_t needed = static_cast<uint64_t>(start) + static_cast<uint64_t>(feed_tokens) +
                          static_cast<uint64_t>(std::max<int64_t>(config.max_new_tokens - 1, 0));
  if (needed > static_cast<uint64_t>(info.max_context))
    return make_error(ErrorCode::kCapacity,
                      "prompt of {} tokens plus {} new tokens after {} already in the session needs {} positions, "
                      "but the program's context is {}",
                      prompt_ids.size(), config.max_new_tokens, start, needed, info.max_context);
  return ok_status();
}

Result<GenerationResult> Runner::generate_context(const std::vector<int64_t>& context_ids,
                                                  const GenerationConfig& config, const TextCallback& on_text,
                                                  int64_t* reused_tokens) {
  if (context_ids.empty())
    return make_error(ErrorCode::kInvalidArgument, "the prompt is empty (no tokens to process)");
  // The longest prefix shared with the session, leaving at least one token to run for logits.
  const size_t limit = std::min(history_.size(), context_ids.size() - 1);
  size_t shared = 0;
  while (shared < limit && history_[shared] == context_ids[shared]) ++shared;
  // Cache slots from `kept` on are simply overwritten (the contract never reads past the position).
  const int64_t kept = std::min<int64_t>(static_cast<int64_t>(shared), position_);
  const bool keep_pending = shared == history_.size() && pending_.has_value();
  const std::vector<int64_t> suffix(context_ids.begin() + static_cast<std::ptrdiff_t>(shared), context_ids.end());
  KESTREL_RETURN_IF_ERROR(
      check_request(kept, static_cast<int64_t>(suffix.size()) + (keep_pending ? 1 : 0), suffix, config));
  if (shared < history_.size()) {
    history_.resize(shared);
    pending_.reset();
    position_ = kept;
  }
  if (reused_tokens != nullptr) *reused_tokens = kept;
  return run(suffix, config, on_text);
}

Result<GenerationResult> Runner::run(std::vector<int64_t> prompt_ids, const GenerationConfig& config,
                                     const TextCallback& on_text) {
  const ModelInfo& info = model_info();
  const auto prompt_tokens = static_cast<int64_t>(prompt_ids.size());
  // The previous turn's last sampled token has not been through the model yet: it goes first.
  std::vector<int64_t> feed;
  if (pending_) feed.push_back(*pending_);
  feed.insert(feed.end(), prompt_ids.begin(), prompt_ids.end());
  // Everything that can fail is checked before the first forward call.
  KESTREL_RETURN_IF_ERROR(check_request(position_, static_cast<int64_t>(feed.size()), prompt_ids, config));

  GenerationResult result;
  result.prompt_token_ids = prompt_ids;
  const auto start = Clock::now();
  auto logits = io_->forward(feed, position_);
  if (!logits.ok()) {
    reset();  // a failed call may have written part of the cache
    return logits.error().with_context("processing the prompt");
  }
  last_logits_ = *logits;
  const double prefill_ms = ms_since(start);
  position_ += static_cast<int64_t>(feed.size());
  pending_.reset();
  history_.insert(history_.end(), prompt_ids.begin(), prompt_ids.end());

  Sampler sampler(config.sampler);
  std::optional<StreamingDecoder> decoder;
  // The last prompt token tells the decoder whether the first piece keeps its leading space.
  if (tokenizer_) decoder.emplace(*tokenizer_, history_.empty() ? -1 : history_.back());
  StopStringFilter stops(config.stop_strings);
  bool keep_going = true;
  auto emit = [&](const std::string& text) {
    if (text.empty()) return;
    result.text += text;
    if (on_text && !on_text(text)) keep_going = false;
  };
  result.stop_reason = "max_new_tokens";
  const IoStats io_before = io_->io_stats();
  const auto decode_start = Clock::now();
  for (int64_t n = 0; n < config.max_new_tokens && keep_going; ++n) {
    const int64_t token = sampler.sample(*logits, history_);
    if (n == 0) result.stats.ttft_ms = ms_since(start);
    if (config.stop_at_eos && std::find(info.eos_ids.begin(), info.eos_ids.end(), token) != info.eos_ids.end()) {
      result.stop_reason = "eos";
      break;
    }
    if (config.stop_at_eos &&
        std::find(config.stop_token_ids.begin(), config.stop_token_ids.end(), token) != config.stop_token_ids.end()) {
      result.stop_reason = "stop_token";
      break;
    }
    result.token_ids.push_back(token);
    history_.push_back(token);
    if (decoder) {
      emit(stops.push(decoder->push(token)));
      if (stops.stopped()) {
        result.stop_reason = "stop_string";
        break;
      }
    }
    if (config.on_token && !config.on_token(token)) keep_going = false;
    if (n + 1 == config.max_new_tokens || !keep_going) break;
    logits = io_->forward(std::span<const int64_t>(&token, 1), position_);
    if (!logits.ok()) {
      reset();
      return logits.error().with_context(fmt::format("generation step {} (feeding generated token {})", n + 1, token));
    }
    last_logits_ = *logits;
    ++position_;
  }
  if (decoder && !stops.stopped()) emit(stops.push(decoder->flush()) + stops.flush());
  if (!keep_going && result.stop_reason == "max_new_tokens") result.stop_reason = "callback";
  // The last sampled token is in the history but not yet in the cache; the next turn feeds it.
  if (static_cast<int64_t>(history_.size()) > position_) pending_ = history_.back();

  const double decode_ms = ms_since(decode_start);
  auto& stats = result.stats;
  stats.load_ms = load_ms_;
  stats.prompt_tokens = prompt_tokens;
  stats.generated_tokens = static_cast<int64_t>(result.token_ids.size());
  stats.prefill_tokens_per_s = prefill_ms > 0 ? prompt_tokens / (prefill_ms / 1000.0) : 0;
  const int64_t decode_steps = std::max<int64_t>(stats.generated_tokens - 1, 0);
  stats.decode_tokens_per_s = decode_ms > 0 && decode_steps > 0 ? decode_steps / (decode_ms / 1000.0) : 0;
  stats.peak_rss_bytes = peak_rss_bytes();
  const IoStats io_after = io_->io_stats();
  if (const int64_t steps = io_after.decode_calls - io_before.decode_calls; steps > 0)
    stats.cache_bytes_copied_per_decode_step =
        static_cast<double>(io_after.decode_cache_bytes_copied - io_before.decode_cache_bytes_copied) / steps;
  return result;
}

}  // namespace kestrel::llm
