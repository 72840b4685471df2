// The hf_static v1 contract (docs/hf_static-v1.md): a prefill method with a fixed step and a
// decode method with step 1; float KV caches are program I/O owned by this manager.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/llm/io_buffers.h"
#include "kestrel/llm/io_manager.h"

namespace kestrel::llm {

// A prefill method and the tokens it processes per call.
struct PrefillMethod {
  std::string name;
  int64_t step = 0;
};

struct HfStaticConfig {
  std::string prefill_method;
  std::string decode_method;
  int64_t prefill_step = 0;
  // Every prefill method, by increasing step: prefill_method alone, or the buckets listed by
  // the optional prefill_steps key (each step's method named by "prefill_method.S").
  std::vector<PrefillMethod> prefill_methods;
  int64_t max_context = 0;
  int64_t vocab_size = 0;
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  DType cache_dtype = DType::kF32;  // f32 or f16: the caches' and the new slices' element type
  std::string logits;
  int64_t bos_id = -1;
  std::vector<int64_t> eos_ids;
  // Optional key cache_update = "in_place": the methods write their new k/v slices into the
  // caches themselves, so the runner copies nothing (absent or "runner": the runner copies).
  bool cache_updated_in_place = false;

  // Bytes of one head_dim row of a cache.
  size_t cache_row_bytes() const { return static_cast<size_t>(head_dim) * dtype_element_size(cache_dtype); }
};

// Reads and checks every field; the error names the first field that is missing or invalid.
Result<HfStaticConfig> parse_hf_static_metadata(const program::Metadata& metadata);
// Checks a method's I/O count, dtypes and shapes against the config for step T. Names are not
// checked: I/O binds by index (docs/hf_static-v1.md); the names appear in the messages.
Status validate_hf_static_method(const runtime::Method& method, const HfStaticConfig& config, int64_t step);

// How the prompt tail (fewer tokens than the smallest prefill step) is run.
enum class TailPolicy {
  kDecode,   // one decode call per token
  kOverlap,  // one call of the smallest prefill method whose rows end with the tail: the earlier
             // rows recompute positions already in the cache (identical results) or, for a
             // prompt shorter than the step, fill slots past it that later tokens overwrite;
             // when it is cheaper than the decode calls (measured, or before anything is timed,
             // estimated: kUntimedPrefillStepsPerDecodeCall)
  kWindow,   // that window for every tail of two tokens or more, whatever it costs
};
// Before a session has timed its calls, a prefill call of T steps is taken to cost as much as
// T / 16 decode calls (hf_static_io_manager.cpp says what was measured).
inline constexpr int64_t kUntimedPrefillStepsPerDecodeCall = 16;

class HfStaticIOManager final : public IOManager {
 public:
  Status load(std::shared_ptr<const runtime::Program> program,
              std::shared_ptr<runtime::BufferAllocator> allocator) override;
  const ModelInfo& model_info() const override { return info_; }
  Result<std::span<const float>> forward(std::span<const int64_t> tokens, int64_t start) override;
  void reset() override;

  const HfStaticConfig& config() const { return config_; }
  void set_tail_policy(TailPolicy policy) { tail_policy_ = policy; }
  // Calls made so far, for tests and stats (prefill: every prefill method, or the one of `step`).
  int64_t prefill_calls() const;
  int64_t prefill_calls(int64_t step) const;
  int64_t decode_calls() const { return decode_.calls; }
  IoStats io_stats() const override;
  std::vector<runtime::Method*> methods() override;
  const IoBuffers& buffers() const { return *buffers_; }

 private:
  struct MethodIo {
    std::unique_ptr<runtime::Method> method;
    int64_t step = 0;
    int64_t* tokens = nullptr;
    int64_t* positions = nullptr;
    float* logits = nullptr;
    int64_t logit_rows = 0;
    std::vector<uint8_t*> new_kv;  // per layer: k, v  [1, n_kv_heads, step, head_dim] of cache_dtype
    int64_t calls = 0;
    double seconds = 0;        // running mean per call
    int64_t bytes_copied = 0;  // into the caches, counted as copied
  };
  Result<MethodIo> prepare(const std::string& name, int64_t step);
  // Runs one call on `io` whose last row is position end - 1: rows for the positions before it
  // as far back as io.step reaches (a chunk or a decode step: exactly [end - io.step, end)),
  // and where there are fewer than that, first rows for slots end, end + 1, ... (a prompt
  // shorter than io.step) holding a filler token.
  Status run_to(MethodIo& io, int64_t end);
  // Executes `io` with its tokens and positions filled, checks its logits, writes the new cache
  // slices at their positions (unless the program did) and times the call.
  Status execute(MethodIo& io);
  // Whether one call of the smallest prefill method is expected to beat `tail` decode calls.
  bool window_is_cheaper(int64_t tail) const;

  std::shared_ptr<const runtime::Program> program_;
  std::unique_ptr<IoBuffers> buffers_;  // declared after program_: freed before it
  HfStaticConfig config_;
  ModelInfo info_;
  std::vector<uint8_t*> caches_;  // per layer: k, v  [1, n_kv_heads, max_context, head_dim] of cache_dtype
  std::vector<MethodIo> prefills_;  // by increasing step, as config_.prefill_methods
  MethodIo decode_;
  std::vector<int64_t> history_;  // token at each filled position
  TailPolicy tail_policy_ = TailPolicy::kOverlap;
};

}  // namespace kestrel::llm
