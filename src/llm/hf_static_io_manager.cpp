#include "kestrel/llm/hf_static_io_manager.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstring>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/finite.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::llm {

namespace keys = contract::hf_static;

namespace {

Error field_error(const char* field, const std::string& problem) {
  return make_error(ErrorCode::kInvalidArgument, "hf_static v1: metadata '{}' {}", field, problem);
}

template <typename T>
Result<T> read(const program::Metadata& metadata, const char* field, const char* type_name) {
  auto it = metadata.find(field);
  if (it == metadata.end()) return field_error(field, "is missing");
  if (!std::holds_alternative<T>(it->second)) return field_error(field, fmt::format("must be {}", type_name));
  return std::get<T>(it->second);
}

Result<int64_t> read_positive(const program::Metadata& metadata, const char* field) {
  KESTREL_ASSIGN_OR_RETURN(int64_t value, read<int64_t>(metadata, field, "an integer"));
  if (value < 1) return field_error(field, fmt::format("must be >= 1 (got {})", value));
  return value;
}

Status expect_tensor(const runtime::Method& method, const runtime::TensorInfo& info, const std::string& role,
                     DType dtype, const Shape& shape) {
  if (info.dtype != dtype || info.shape != shape)
    return make_error(ErrorCode::kInvalidArgument, "hf_static v1: method '{}' {} '{}' is {} {}, expected {} {}",
                      method.name(), role, info.name, dtype_name(info.dtype), info.shape.to_string(),
                      dtype_name(dtype), shape.to_string());
  return ok_status();
}

// The I/O buffers the metadata implies must have sizes a 64-bit byte count holds (a damaged
// program can claim anything); whether they fit in memory is the allocator's answer.
Status check_buffer_sizes(const HfStaticConfig& c) {
  int64_t cache = 4, caches = 0, logits = 4;
  const int64_t step = c.prefill_methods.empty() ? c.prefill_step : c.prefill_methods.back().step;
  const bool overflow = __builtin_mul_overflow(cache, c.n_kv_heads, &cache) ||
                        __builtin_mul_overflow(cache, c.max_context, &cache) ||
                        __builtin_mul_overflow(cache, c.head_dim, &cache) ||
                        __builtin_mul_overflow(cache, c.n_layers, &caches) ||
                        __builtin_mul_overflow(caches, 2, &caches) ||
                        __builtin_mul_overflow(logits, c.vocab_size, &logits) ||
                        __builtin_mul_overflow(logits, step, &logits);
  if (overflow)
    return make_error(ErrorCode::kInvalidArgument,
                      "hf_static v1: metadata n_layers={} n_kv_heads={} max_context={} head_dim={} vocab_size={} "
                      "prefill_step={} describe buffers larger than a 64-bit byte count",
                      c.n_layers, c.n_kv_heads, c.max_context, c.head_dim, c.vocab_size, step);
  return ok_status();
}

// A non-finite logit means the model broke (a damaged constant, an overflow, a faulty backend):
// sampling from it would print garbage, so the call fails naming where it happened.
// `positions` are the call's rows' positions (rows == step: one logit row per position;
// otherwise the last row's).
Status check_logits_finite(const runtime::Method& method, const float* logits, int64_t rows, int64_t vocab,
                           std::span<const int64_t> positions) {
  const int64_t at = first_non_finite({logits, static_cast<size_t>(rows * vocab)});
  if (at < 0) return ok_status();
  const int64_t r = at / vocab, i = at % vocab;
  const auto step = static_cast<int64_t>(positions.size());
  const int64_t position = rows == step ? positions[r] : positions[step - 1];
  const auto [lowest, highest] = std::minmax_element(positions.begin(), positions.end());
  return make_error(ErrorCode::kCorrupt,
                    "hf_static v1: method '{}' returned a non-finite logit ({}) for token id {} at position {} "
                    "(the call over positions [{}, {}))",
                    method.name(), logits[at], i, position, *lowest, *highest + 1);
}

// The prefill methods by increasing step: prefill_method alone, or every step of the optional
// prefill_steps list with its method (prefill_method for prefill_step, "prefill_method.S" for
// the others). Called once the single-method fields are read.
Status read_prefill_methods(const program::Metadata& metadata, HfStaticConfig& config) {
  config.prefill_methods = {PrefillMethod{config.prefill_method, config.prefill_step}};
  if (metadata.count(keys::kPrefillSteps) == 0) return ok_status();
  KESTREL_ASSIGN_OR_RETURN(const std::vector<int64_t> steps,
                           read<std::vector<int64_t>>(metadata, keys::kPrefillSteps, "an integer list"));
  config.prefill_methods.clear();
  for (size_t i = 0; i < steps.size(); ++i) {
    const int64_t step = steps[i];
    if (step < 1 || step > config.max_context)
      return field_error(keys::kPrefillSteps,
                         fmt::format("contains {}, outside [1, max_context = {}]", step, config.max_context));
    if (i > 0 && step <= steps[i - 1])
      return field_error(keys::kPrefillSteps,
                         fmt::format("must be strictly increasing ({} follows {})", step, steps[i - 1]));
    if (step == config.prefill_step) {
      config.prefill_methods.push_back(PrefillMethod{config.prefill_method, step});
      continue;
    }
    const std::string key = keys::kPrefillMethodPrefix + std::to_string(step);
    KESTREL_ASSIGN_OR_RETURN(std::string name, read<std::string>(metadata, key.c_str(), "a string"));
    const bool taken = name == config.decode_method || name == config.prefill_method ||
                       std::any_of(config.prefill_methods.begin(), config.prefill_methods.end(),
                                   [&](const PrefillMethod& m) { return m.name == name; });
    if (taken) return field_error(key.c_str(), fmt::format("names '{}', the method of another step", name));
    config.prefill_methods.push_back(PrefillMethod{std::move(name), step});
  }
  const bool listed = std::any_of(config.prefill_methods.begin(), config.prefill_methods.end(),
                                  [&](const PrefillMethod& m) { return m.step == config.prefill_step; });
  if (!listed)
    return field_error(keys::kPrefillSteps, fmt::format("does not list prefill_step ({})", config.prefill_step));
  return ok_status();
}

}  // namespace

Result<HfStaticConfig> parse_hf_static_metadata(const program::Metadata& metadata) {
  HfStaticConfig config;
  KESTREL_ASSIGN_OR_RETURN(config.prefill_method, read<std::string>(metadata, keys::kPrefillMethod, "a string"));
  KESTREL_ASSIGN_OR_RETURN(config.decode_method, read<std::string>(metadata, keys::kDecodeMethod, "a string"));
  KESTREL_ASSIGN_OR_RETURN(config.prefill_step, read_positive(metadata, keys::kPrefillStep));
  KESTREL_ASSIGN_OR_RETURN(config.max_context, read_positive(metadata, keys::kMaxContext));
  if (config.prefill_step > config.max_context)
    return field_error(keys::kPrefillStep,
                       fmt::format("({}) exceeds max_context ({})", config.prefill_step, config.max_context));
  KESTREL_ASSIGN_OR_RETURN(config.vocab_size, read_positive(metadata, keys::kVocabSize));
  KESTREL_ASSIGN_OR_RETURN(config.n_layers, read_positive(metadata, keys::kNumLayers));
  KESTREL_ASSIGN_OR_RETURN(config.n_kv_heads, read_positive(metadata, keys::kNumKvHeads));
  KESTREL_ASSIGN_OR_RETURN(config.head_dim, read_positive(metadata, keys::kHeadDim));
  KESTREL_ASSIGN_OR_RETURN(const std::string cache_dtype, read<std::string>(metadata, keys::kCacheDtype, "a string"));
  const auto cache_element = dtype_from_name(cache_dtype);
  if (!cache_element || !keys::is_cache_dtype(*cache_element))
    return field_error(keys::kCacheDtype,
                       fmt::format("is '{}'; version 1 defines 'f32' and 'f16' caches", cache_dtype));
  config.cache_dtype = *cache_element;
  KESTREL_ASSIGN_OR_RETURN(config.logits, read<std::string>(metadata, keys::kLogits, "a string"));
  if (config.logits != "last" && config.logits != "all")
    return field_error(keys::kLogits, fmt::format("is '{}'; expected 'last' or 'all'", config.logits));
  KESTREL_ASSIGN_OR_RETURN(config.bos_id, read<int64_t>(metadata, keys::kBosId, "an integer"));
  if (config.bos_id < -1 || config.bos_id >= config.vocab_size)
    return field_error(keys::kBosId, fmt::format("({}) is outside the vocabulary [0, {}) and not -1", config.bos_id,
                                                 config.vocab_size));
  KESTREL_ASSIGN_OR_RETURN(config.eos_ids, read<std::vector<int64_t>>(metadata, keys::kEosIds, "an integer list"));
  for (int64_t id : config.eos_ids)
    if (id < 0 || id >= config.vocab_size)
      return field_error(keys::kEosIds,
                         fmt::format("contains {}, outside the vocabulary [0, {})", id, config.vocab_size));
  if (config.prefill_method == config.decode_method)
    return field_error(keys::kDecodeMethod, "names the same method as prefill_method");
  if (metadata.count(keys::kCacheUpdate) != 0) {
    KESTREL_ASSIGN_OR_RETURN(const std::string update, read<std::string>(metadata, keys::kCacheUpdate, "a string"));
    if (update != keys::kCacheUpdateRunner && update != keys::kCacheUpdateInPlace)
      return field_error(keys::kCacheUpdate, fmt::format("is '{}'; expected '{}' or '{}'", update,
                                                         keys::kCacheUpdateRunner, keys::kCacheUpdateInPlace));
    config.cache_updated_in_place = update == keys::kCacheUpdateInPlace;
  }
  KESTREL_RETURN_IF_ERROR(read_prefill_methods(metadata, config));
  KESTREL_RETURN_IF_ERROR(check_buffer_sizes(config));
  return config;
}

Status validate_hf_static_method(const runtime::Method& method, const HfStaticConfig& config, int64_t step) {
  const int64_t L = config.n_layers, H = config.n_kv_heads, C = config.max_context, Dh = config.head_dim;
  const size_t expected_inputs = 2 + 2 * static_cast<size_t>(L);
  if (method.num_inputs() != expected_inputs || method.num_outputs() != expected_inputs - 1)
    return make_error(ErrorCode::kInvalidArgument,
                      "hf_static v1: method '{}' has {} inputs and {} outputs; n_layers={} needs {} and {}",
                      method.name(), method.num_inputs(), method.num_outputs(), L, expected_inputs,
                      expected_inputs - 1);
  KESTREL_RETURN_IF_ERROR(expect_tensor(method, method.input_info(0), "input 0 (tokens)", DType::kI64, {1, step}));
  KESTREL_RETURN_IF_ERROR(expect_tensor(method, method.input_info(1), "input 1 (positions)", DType::kI64, {step}));
  for (int64_t i = 0; i < 2 * L; ++i)
    KESTREL_RETURN_IF_ERROR(expect_tensor(method, method.input_info(2 + i), fmt::format("input {} (cache)", 2 + i),
                                          config.cache_dtype, {1, H, C, Dh}));
  const int64_t rows = config.logits == "last" ? 1 : step;
  KESTREL_RETURN_IF_ERROR(
      expect_tensor(method, method.output_info(0), "output 0 (logits)", DType::kF32, {1, rows, config.vocab_size}));
  for (int64_t i = 0; i < 2 * L; ++i)
    KESTREL_RETURN_IF_ERROR(expect_tensor(method, method.output_info(1 + i),
                                          fmt::format("output {} (new cache slice)", 1 + i), config.cache_dtype,
                                          {1, H, step, Dh}));
  return ok_status();
}

Status HfStaticIOManager::load(std::shared_ptr<const runtime::Program> program,
                               std::shared_ptr<runtime::BufferAllocator> allocator) {
  KESTREL_ASSIGN_OR_RETURN(config_, parse_hf_static_metadata(program->metadata()));
  program_ = std::move(program);
  buffers_ = std::make_unique<IoBuffers>(std::move(allocator));
  info_ = ModelInfo{config_.vocab_size, config_.max_context, config_.bos_id, config_.eos_ids};

  // Caches are shared by both methods: one buffer per layer and kind.
  runtime::TensorInfo cache_info;
  cache_info.dtype = config_.cache_dtype;
  cache_info.shape = Shape{1, config_.n_kv_heads, config_.max_context, config_.head_dim};
  cache_info.nbytes = static_cast<size_t>(config_.n_kv_heads * config_.max_context) * config_.cache_row_bytes();
  caches_.clear();
  for (int64_t l = 0; l < config_.n_layers; ++l)
    for (const char* kind : {"k", "v"}) {
      cache_info.name = fmt::format("{}_cache_{}", kind, l);
      KESTREL_ASSIGN_OR_RETURN(void* buffer, buffers_->allocate(cache_info));
      caches_.push_back(static_cast<uint8_t*>(buffer));
    }
  prefills_.clear();
  for (const PrefillMethod& prefill : config_.prefill_methods) {
    KESTREL_ASSIGN_OR_RETURN(MethodIo io, prepare(prefill.name, prefill.step));
    prefills_.push_back(std::move(io));
  }
  KESTREL_ASSIGN_OR_RETURN(decode_, prepare(config_.decode_method, 1));
  history_.clear();
  history_.reserve(static_cast<size_t>(config_.max_context));  // forward() never allocates
  return ok_status();
}

Result<HfStaticIOManager::MethodIo> HfStaticIOManager::prepare(const std::string& name, int64_t step) {
  MethodIo io;
  auto method = program_->load_method(name);
  if (!method.ok()) return method.error().with_context("hf_static v1");
  io.method = std::move(method).value();
  io.step = step;
  KESTREL_RETURN_IF_ERROR(validate_hf_static_method(*io.method, config_, step));
  runtime::Method& m = *io.method;
  KESTREL_ASSIGN_OR_RETURN(void* tokens, buffers_->allocate(m.input_info(0)));
  KESTREL_ASSIGN_OR_RETURN(void* positions, buffers_->allocate(m.input_info(1)));
  KESTREL_RETURN_IF_ERROR(buffers_->bind_input(m, 0, tokens));
  KESTREL_RETURN_IF_ERROR(buffers_->bind_input(m, 1, positions));
  for (size_t i = 0; i < caches_.size(); ++i) KESTREL_RETURN_IF_ERROR(buffers_->bind_input(m, 2 + i, caches_[i]));
  KESTREL_ASSIGN_OR_RETURN(void* logits, buffers_->allocate(m.output_info(0)));
  KESTREL_RETURN_IF_ERROR(buffers_->bind_output(m, 0, logits));
  for (size_t i = 0; i < caches_.size(); ++i) {
    KESTREL_ASSIGN_OR_RETURN(void* slice, buffers_->allocate(m.output_info(1 + i)));
    KESTREL_RETURN_IF_ERROR(buffers_->bind_output(m, 1 + i, slice));
    io.new_kv.push_back(static_cast<uint8_t*>(slice));
  }
  io.tokens = static_cast<int64_t*>(tokens);
  io.positions = static_cast<int64_t*>(positions);
  io.logits = static_cast<float*>(logits);
  io.logit_rows = m.output_info(0).shape[1];
  return io;
}

Status HfStaticIOManager::run_to(MethodIo& io, int64_t end) {
  // Rows past the prompt first (slots end, end + 1, ...), then the positions up to `end`.
  const int64_t past = std::max<int64_t>(0, io.step - end), first = end - (io.step - past);
  for (int64_t t = 0; t < io.step; ++t) {
    const bool filler = t < past;
    io.positions[t] = filler ? end + t : first + (t - past);
    io.tokens[t] = filler ? history_[end - 1] : history_[io.positions[t]];
  }
  return execute(io);
}

Status HfStaticIOManager::execute(MethodIo& io) {
  const auto begin = std::chrono::steady_clock::now();
  KESTREL_RETURN_IF_ERROR(io.method->execute());
  KESTREL_RETURN_IF_ERROR(check_logits_finite(*io.method, io.logits, io.logit_rows, config_.vocab_size,
                                              {io.positions, static_cast<size_t>(io.step)}));
  // Unless the program wrote them in place, write each new slice at its position.
  int64_t copied = 0;
  if (!config_.cache_updated_in_place) {
    const int64_t H = config_.n_kv_heads, C = config_.max_context;
    const size_t row_bytes = config_.cache_row_bytes();
    for (size_t i = 0; i < caches_.size(); ++i)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t t = 0; t < io.step; ++t) {
          std::memcpy(caches_[i] + static_cast<size_t>(h * C + io.positions[t]) * row_bytes,
                      io.new_kv[i] + static_cast<size_t>(h * io.step + t) * row_bytes, row_bytes);
          copied += static_cast<int64_t>(row_bytes);
        }
  }
  io.bytes_copied += copied;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  ++io.calls;
  io.seconds += (seconds - io.seconds) / static_cast<double>(std::min<int64_t>(io.calls, 16));
  return ok_status();
}

bool HfStaticIOManager::window_is_cheaper(int64_t tail) const {
  const MethodIo& smallest = prefills_.front();
  double seconds = smallest.seconds;
  if (smallest.calls == 0) {
    // Not timed yet (the prompt so far went through larger buckets): scale the largest timed
    // bucket by its step, which overestimates a smaller call's share of fixed costs only mildly.
    auto timed = std::find_if(prefills_.rbegin(), prefills_.rend(), [](const MethodIo& io) { return io.calls > 0; });
    seconds = timed == prefills_.rend() ? 0.0
                                        : timed->seconds * static_cast<double>(smallest.step) /
                                              static_cast<double>(timed->step);
  }
  if (seconds > 0.0 && decode_.calls > 0) return seconds < static_cast<double>(tail) * decode_.seconds;
  // Before both are timed (a session's first prompt): a prefill call of T steps is taken to cost
  // T / 16 decode calls. Measured on CPUs with T = 128: 2.7 (Qwen3-0.6B bf16 on AMX), 5 (the
  // 110M shape, f32) and 9.5 (110M, q8) decode calls.
  return tail * kUntimedPrefillStepsPerDecodeCall > smallest.step;
}

Result<std::span<const float>> HfStaticIOManager::forward(std::span<const int64_t> tokens, int64_t start) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "hf_static v1: forward needs at least one token");
  if (start < 0 || start > static_cast<int64_t>(history_.size()))
    return make_error(ErrorCode::kInvalidArgument,
                      "hf_static v1: forward at position {}, but the caches hold positions [0, {}): a call may "
                      "only continue or rewind the context",
                      start, history_.size());
  if (start + n > config_.max_context)
    return make_error(ErrorCode::kCapacity, "hf_static v1: positions [{}, {}) do not fit the context of {}", start,
                      start + n, config_.max_context);
  for (int64_t token : tokens)
    if (token < 0 || token >= config_.vocab_size)
      return make_error(ErrorCode::kInvalidArgument, "hf_static v1: token id {} is outside the vocabulary [0, {})",
                        token, config_.vocab_size);
  history_.resize(start);
  history_.insert(history_.end(), tokens.begin(), tokens.end());

  int64_t position = start;
  const float* last_logits = nullptr;
  auto last_row = [](const MethodIo& io, int64_t vocab) { return io.logits + (io.logit_rows - 1) * vocab; };
  // Full chunks, each through the largest prefill step that fits what is left (a step of 1 is
  // left to the decode method).
  for (;;) {
    const int64_t left = start + n - position;
    auto fits = std::find_if(prefills_.rbegin(), prefills_.rend(),
                             [&](const MethodIo& io) { return io.step <= left && io.step > 1; });
    if (fits == prefills_.rend()) break;
    position += fits->step;
    KESTREL_RETURN_IF_ERROR(run_to(*fits, position));
    last_logits = last_row(*fits, config_.vocab_size);
  }
  // The tail: decode calls, or one window of the smallest prefill method ending at the last
  // token (run_to). Its other rows recompute positions already in the cache, which gives
  // the same slices, or (a prompt shorter than the window) fill slots past the prompt, which
  // the following tokens overwrite before any query reads them: a query reads the slots up to
  // its own position only. Either way the tail's logits are the same.
  MethodIo& smallest = prefills_.front();
  const int64_t T = smallest.step, tail = start + n - position;
  const bool window = tail > 1 && T > 1 && T <= config_.max_context &&
                      (tail_policy_ == TailPolicy::kWindow ||
                       (tail_policy_ == TailPolicy::kOverlap && window_is_cheaper(tail)));
  if (window) {
    KESTREL_RETURN_IF_ERROR(run_to(smallest, start + n));
    position = start + n;
    last_logits = last_row(smallest, config_.vocab_size);
  }
  for (; position < start + n; ++position) {
    KESTREL_RETURN_IF_ERROR(run_to(decode_, position + 1));
    last_logits = last_row(decode_, config_.vocab_size);
  }
  return std::span<const float>(last_logits, static_cast<size_t>(config_.vocab_size));
}

int64_t HfStaticIOManager::prefill_calls() const {
  int64_t calls = 0;
  for (const MethodIo& io : prefills_) calls += io.calls;
  return calls;
}

int64_t HfStaticIOManager::prefill_calls(int64_t step) const {
  for (const MethodIo& io : prefills_)
    if (io.step == step) return io.calls;
  return 0;
}

IoStats HfStaticIOManager::io_stats() const {
  int64_t prefill_bytes = 0;
  for (const MethodIo& io : prefills_) prefill_bytes += io.bytes_copied;
  return IoStats{prefill_calls(), decode_.calls, prefill_bytes, decode_.bytes_copied};
}

std::vector<runtime::Method*> HfStaticIOManager::methods() {
  std::vector<runtime::Method*> loaded;
  for (MethodIo& io : prefills_)
    if (io.method) loaded.push_back(io.method.get());
  if (decode_.method) loaded.push_back(decode_.method.get());
  return loaded;
}

void HfStaticIOManager::reset() {
  history_.clear();
  const size_t bytes = static_cast<size_t>(config_.n_kv_heads * config_.max_context) * config_.cache_row_bytes();
  for (uint8_t* cache : caches_) std::memset(cache, 0, bytes);
}

}  // namespace kestrel::llm
