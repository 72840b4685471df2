// The runner: contract selection, hf_static v1 validation, the allocator hook, and generation
// semantics (capacity, chunking, seeds, sessions, stop conditions).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/llm/runner.h"
#include "kestrel/llm/stop_strings.h"
#include "kestrel/program/io_contract.h"
#include "llm/reference_model.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

namespace keys = contract::hf_static;

const program::ProgramSpec& base_spec() {
  static const program::ProgramSpec spec = export_fixture(small_fixture(), small_export(4, 48));
  return spec;
}

Result<std::unique_ptr<llm::Runner>> runner_for(const program::ProgramSpec& spec, llm::RunnerOptions options = {}) {
  return llm::Runner::from_program(load_spec(spec), options);
}

// ---- contract selection ----

// A contract whose manager ignores the program and always predicts (last token + 1) mod vocab.
class CountingIOManager : public llm::IOManager {
 public:
  Status load(std::shared_ptr<const runtime::Program>, std::shared_ptr<runtime::BufferAllocator>) override {
    info_ = llm::ModelInfo{16, 64, -1, {}};
    logits_.assign(16, 0.0f);
    return ok_status();
  }
  const llm::ModelInfo& model_info() const override { return info_; }
  Result<std::span<const float>> forward(std::span<const int64_t> tokens, int64_t) override {
    std::fill(logits_.begin(), logits_.end(), 0.0f);
    logits_[(tokens.back() + 1) % 16] = 10.0f;
    return std::span<const float>(logits_);
  }
  void reset() override {}

 private:
  llm::ModelInfo info_;
  std::vector<float> logits_;
};

TEST(IOManagerRegistry, UsesTheContractTheProgramDeclares) {
  llm::IOManagerRegistry registry;
  registry.add("counting", 3, [] { return std::make_unique<CountingIOManager>(); });
  auto spec = base_spec();
  spec.metadata[contract::kIoContract] = std::string("counting");
  spec.metadata[contract::kIoContractVersion] = int64_t{3};
  llm::RunnerOptions options;
  options.io_managers = &registry;
  auto runner = runner_for(spec, options);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  auto result = (*runner)->generate_ids({5}, greedy_tokens(3));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->token_ids, (std::vector<int64_t>{6, 7, 8}));
}

TEST(IOManagerRegistry, UnknownContractOrVersionListsRegistered) {
  auto spec = base_spec();
  spec.metadata[contract::kIoContractVersion] = int64_t{2};
  auto runner = runner_for(spec);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find("no IOManager for contract 'hf_static' version 2 (registered: hf_static v1)"),
            std::string::npos)
      << runner.error().message();
  spec = base_spec();
  spec.metadata[contract::kIoContract] = std::string("mystery");
  runner = runner_for(spec);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find("'mystery'"), std::string::npos);
  spec = base_spec();
  spec.metadata.erase(contract::kIoContract);
  runner = runner_for(spec);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find("io_contract"), std::string::npos);
}

// ---- hf_static v1 validation ----

struct InvalidCase {
  std::string name;
  std::string key;
  program::MetaValue value;
  std::string expected;  // substring of the error
  bool erase = false;
};

void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.name; }

// Applies one invalid case to a spec and expects the runner to refuse it, naming the field.
void expect_rejected(program::ProgramSpec spec, const InvalidCase& c) {
  if (c.erase)
    spec.metadata.erase(c.key);
  else
    spec.metadata[c.key] = c.value;
  auto runner = runner_for(spec);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find(c.expected), std::string::npos) << runner.error().message();
}

class HfStaticValidation : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(HfStaticValidation, RejectsWithMessageNamingTheField) {
  expect_rejected(base_spec(), GetParam());
}

INSTANTIATE_TEST_SUITE_P(
    Fields, HfStaticValidation,
    ::testing::Values(
        InvalidCase{"missing_prefill_method", keys::kPrefillMethod, int64_t{0}, "'prefill_method' is missing", true},
        InvalidCase{"prefill_method_not_string", keys::kPrefillMethod, int64_t{3}, "'prefill_method' must be a string"},
        InvalidCase{"prefill_method_absent", keys::kPrefillMethod, std::string("warmup"), "no method 'warmup'"},
        InvalidCase{"decode_method_absent", keys::kDecodeMethod, std::string("step"), "no method 'step'"},
        InvalidCase{"same_methods", keys::kDecodeMethod, std::string("prefill"), "'decode_method'"},
        InvalidCase{"prefill_step_zero", keys::kPrefillStep, int64_t{0}, "'prefill_step' must be >= 1 (got 0)"},
        InvalidCase{"prefill_step_mismatch", keys::kPrefillStep, int64_t{8}, "tokens"},
        InvalidCase{"prefill_step_over_context", keys::kPrefillStep, int64_t{64}, "exceeds max_context"},
        InvalidCase{"max_context_mismatch", keys::kMaxContext, int64_t{40}, "cache"},
        InvalidCase{"max_context_negative", keys::kMaxContext, int64_t{-1}, "'max_context' must be >= 1"},
        InvalidCase{"vocab_mismatch", keys::kVocabSize, int64_t{95}, "logits"},
        InvalidCase{"vocab_missing", keys::kVocabSize, int64_t{0}, "'vocab_size' is missing", true},
        InvalidCase{"layers_mismatch", keys::kNumLayers, int64_t{3}, "n_layers=3"},
        InvalidCase{"kv_heads_mismatch", keys::kNumKvHeads, int64_t{4}, "cache"},
        InvalidCase{"head_dim_mismatch", keys::kHeadDim, int64_t{16}, "cache"},
        InvalidCase{"cache_dtype_u8", keys::kCacheDtype, std::string("u8"), "'cache_dtype' is 'u8'"},
        InvalidCase{"cache_dtype_bf16", keys::kCacheDtype, std::string("bf16"), "'cache_dtype' is 'bf16'"},
        InvalidCase{"cache_dtype_f16_on_f32_caches", keys::kCacheDtype, std::string("f16"), "input 2 (cache)"},
        InvalidCase{"logits_mode", keys::kLogits, std::string("middle"), "'logits' is 'middle'"},
        InvalidCase{"logits_all_on_last_program", keys::kLogits, std::string("all"), "logits"},
        InvalidCase{"eos_out_of_vocab", keys::kEosIds, std::vector<int64_t>{2, 96}, "'eos_ids' contains 96"},
        InvalidCase{"bos_out_of_vocab", keys::kBosId, int64_t{1000}, "'bos_id' (1000)"},
        InvalidCase{"cache_size_overflows", keys::kHeadDim, int64_t{1} << 60, "larger than a 64-bit byte count"},
        InvalidCase{"logits_size_overflows", keys::kVocabSize, int64_t{1} << 62, "larger than a 64-bit byte count"},
        InvalidCase{"tokenizer_format_not_string", keys::kTokenizerFormat, int64_t{0},
                    "'tokenizer_format' must be a string"},
        InvalidCase{"tokenizer_format_unknown", keys::kTokenizerFormat, std::string("sentencepiece"),
                    "'tokenizer_format' = 'sentencepiece'"}),
    [](const auto& info) { return info.param.name; });

// ---- prefill buckets ----

const program::ProgramSpec& bucket_spec() {
  static const program::ProgramSpec spec = [] {
    auto options = small_export(4, 48);
    options.extra_prefill_steps = {8};
    return export_fixture(small_fixture(), options);
  }();
  return spec;
}

TEST(HfStaticBuckets, ExporterDeclaresEveryStepAndItsMethod) {
  const auto& meta = bucket_spec().metadata;
  ASSERT_TRUE(meta.count(keys::kPrefillSteps));
  EXPECT_EQ(std::get<std::vector<int64_t>>(meta.at(keys::kPrefillSteps)), (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(std::get<std::string>(meta.at("prefill_method.8")), "prefill_8");
  EXPECT_EQ(std::get<std::string>(meta.at(keys::kPrefillMethod)), "prefill");
  EXPECT_EQ(std::get<int64_t>(meta.at(keys::kPrefillStep)), 4);
  // Without extra steps nothing new is written: older runners read the program as before.
  EXPECT_EQ(base_spec().metadata.count(keys::kPrefillSteps), 0u);
  auto runner = runner_for(bucket_spec());
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  const auto& config = dynamic_cast<llm::HfStaticIOManager&>((*runner)->io_manager()).config();
  ASSERT_EQ(config.prefill_methods.size(), 2u);
  EXPECT_EQ(config.prefill_methods[1].name, "prefill_8");
  EXPECT_EQ(config.prefill_methods[1].step, 8);
}

TEST(HfStaticBuckets, GreedyTokensMatchTheSingleStepProgram) {
  auto single = runner_for(base_spec());
  auto buckets = runner_for(bucket_spec());
  ASSERT_TRUE(single.ok() && buckets.ok());
  const std::vector<int64_t> prompt{1, 17, 42, 5, 88, 23, 64, 9, 31, 77, 50, 12, 3};
  auto want = (*single)->generate_ids(prompt, greedy_tokens(6));
  auto got = (*buckets)->generate_ids(prompt, greedy_tokens(6));
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ(got->token_ids, want->token_ids);
  auto& io = dynamic_cast<llm::HfStaticIOManager&>((*buckets)->io_manager());
  EXPECT_EQ(io.prefill_calls(8), 1);  // 13 prompt tokens: one chunk of 8, then the step of 4
}

TEST(HfStaticBuckets, InvalidBucketsAreRejectedNamingTheKey) {
  const InvalidCase cases[] = {
      {"steps_not_list", keys::kPrefillSteps, int64_t{8}, "'prefill_steps' must be an integer list"},
      {"steps_decreasing", keys::kPrefillSteps, std::vector<int64_t>{8, 4}, "strictly increasing (4 follows 8)"},
      {"steps_repeated", keys::kPrefillSteps, std::vector<int64_t>{4, 4}, "strictly increasing"},
      {"steps_without_prefill_step", keys::kPrefillSteps, std::vector<int64_t>{8}, "does not list prefill_step (4)"},
      {"step_over_context", keys::kPrefillSteps, std::vector<int64_t>{4, 64}, "contains 64, outside [1, max_context = 48]"},
      {"step_zero", keys::kPrefillSteps, std::vector<int64_t>{0, 4}, "contains 0"},
      {"method_missing", "prefill_method.8", int64_t{0}, "'prefill_method.8' is missing", true},
      {"method_not_string", "prefill_method.8", int64_t{8}, "'prefill_method.8' must be a string"},
      {"method_is_decode", "prefill_method.8", std::string("decode"), "names 'decode', the method of another step"},
      {"method_is_prefill", "prefill_method.8", std::string("prefill"), "names 'prefill'"},
      {"method_absent", "prefill_method.8", std::string("prefill_9"), "no method 'prefill_9'"},
  };
  for (const InvalidCase& c : cases) {
    SCOPED_TRACE(c.name);
    expect_rejected(bucket_spec(), c);
  }
  // A bucket whose method has another step's shapes: the I/O check names the method.
  auto spec = bucket_spec();
  spec.metadata[keys::kPrefillSteps] = std::vector<int64_t>{4, 12};
  spec.metadata["prefill_method.12"] = std::string("prefill_8");
  auto runner = runner_for(spec);
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find("method 'prefill_8' input 0 (tokens)"), std::string::npos)
      << runner.error().message();
}

TEST(HfStaticBuckets, ExporterRejectsBadExtraSteps) {
  struct Bad {
    std::vector<int64_t> steps;
    std::string expected;
  };
  for (const Bad& bad : {Bad{{1}, "extra prefill step 1 is outside [2, max context = 48]"},
                         Bad{{64}, "extra prefill step 64 is outside"}, Bad{{4}, "prefill step 4 is given twice"},
                         Bad{{8, 8}, "prefill step 8 is given twice"}}) {
    auto options = small_export(4, 48);
    options.extra_prefill_steps = bad.steps;
    auto spec = try_export_fixture(small_fixture(), options);
    ASSERT_FALSE(spec.ok());
    EXPECT_NE(spec.error().message().find(bad.expected), std::string::npos) << spec.error().message();
  }
}

// ---- the allocator hook ----

class RecordingAllocator : public runtime::BufferAllocator {
 public:
  explicit RecordingAllocator(size_t alignment, std::string decline = "") : alignment_(alignment), decline_(decline) {}
  ~RecordingAllocator() override { EXPECT_TRUE(live.empty()) << live.size() << " buffers never freed"; }
  std::string_view name() const override { return "recording"; }
  size_t alignment() const override { return alignment_; }
  void* allocate(size_t bytes, const runtime::TensorInfo& info) override {
    ++allocations;
    if (!decline_.empty() && info.name.find(decline_) != std::string::npos) {
      ++declined;
      return nullptr;
    }
    void* buffer = std::aligned_alloc(alignment_, (bytes + alignment_ - 1) / alignment_ * alignment_);
    live.insert(buffer);
    return buffer;
  }
  Status bind(void* buffer, const std::string& method, size_t index, bool is_input) override {
    EXPECT_TRUE(live.count(buffer)) << "bind of a buffer this allocator does not own";
    binds[{buffer, method}]++;
    bound_slots.insert({method, index, is_input});
    return ok_status();
  }
  void free(void* buffer) override {
    EXPECT_EQ(live.erase(buffer), 1u) << "free of an unknown or already freed buffer";
    ++frees;
    std::free(buffer);
  }

  size_t alignment_;
  std::string decline_;
  std::set<void*> live;
  std::map<std::pair<void*, std::string>, int> binds;
  std::set<std::tuple<std::string, size_t, bool>> bound_slots;
  int allocations = 0, declined = 0, frees = 0;
};

TEST(BufferAllocatorHook, AlignsBindsOncePerMethodAndFreesEverything) {
  auto allocator = std::make_shared<RecordingAllocator>(256);
  {
    llm::RunnerOptions options;
    options.allocator_instance = allocator;
    auto runner = runner_for(base_spec(), options);
    ASSERT_TRUE(runner.ok()) << runner.error().to_string();
    for (void* buffer : allocator->live) EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 256, 0u);
    for (const auto& [key, count] : allocator->binds) EXPECT_EQ(count, 1) << key.second;
    // 2 layers: 4 caches shared by both methods, each bound once to each.
    int shared = 0;
    for (void* buffer : allocator->live)
      if (allocator->binds.count({buffer, "prefill"}) && allocator->binds.count({buffer, "decode"})) ++shared;
    EXPECT_EQ(shared, 4);
    // Every input and output of both methods was bound: 2 + 4 inputs, 1 + 4 outputs each.
    EXPECT_EQ(allocator->bound_slots.size(), 2u * (6 + 5));
    auto result = (*runner)->generate_ids({1, 2, 3, 4, 5}, greedy_tokens(3));
    ASSERT_TRUE(result.ok());
  }
  EXPECT_EQ(allocator->frees, allocator->allocations);
  EXPECT_TRUE(allocator->live.empty());
}

TEST(BufferAllocatorHook, FreesEverythingWhenLoadFails) {
  auto allocator = std::make_shared<RecordingAllocator>(64);
  auto spec = base_spec();
  spec.metadata[keys::kHeadDim] = int64_t{16};  // caches get allocated, then method validation fails
  llm::RunnerOptions options;
  options.allocator_instance = allocator;
  auto runner = runner_for(spec, options);
  ASSERT_FALSE(runner.ok());
  EXPECT_GT(allocator->allocations, 0);
  EXPECT_EQ(allocator->frees, allocator->allocations);
}

TEST(BufferAllocatorHook, NullAllocationFallsBackToTheHeap) {
  auto allocator = std::make_shared<RecordingAllocator>(128, "cache");
  llm::RunnerOptions options;
  options.allocator_instance = allocator;
  auto runner = runner_for(base_spec(), options);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  EXPECT_EQ(allocator->declined, 4);
  auto& io = dynamic_cast<llm::HfStaticIOManager&>((*runner)->io_manager());
  EXPECT_EQ(io.buffers().heap_fallbacks(), 4u);
  // The heap-backed caches work: generation matches a heap-only runner.
  auto result = (*runner)->generate_ids({3, 1, 4, 1, 5, 9}, greedy_tokens(4));
  auto plain = runner_for(base_spec());
  auto expected = (*plain)->generate_ids({3, 1, 4, 1, 5, 9}, greedy_tokens(4));
  ASSERT_TRUE(result.ok() && expected.ok());
  EXPECT_EQ(result->token_ids, expected->token_ids);
}

TEST(BufferAllocatorHook, HeapFallbackHonoursAlignment) {
  auto allocator = std::make_shared<RecordingAllocator>(4096, "x");
  llm::IoBuffers buffers(allocator);
  runtime::TensorInfo info{"x", DType::kF32, Shape{3}, 12};
  auto buffer = buffers.allocate(info);
  ASSERT_TRUE(buffer.ok());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(*buffer) % 4096, 0u);
  EXPECT_EQ(buffers.heap_fallbacks(), 1u);
}

TEST(BufferAllocatorHook, MemfdAllocatorServesTheRunner) {
  llm::RunnerOptions options;
  options.allocator = "memfd";
  auto runner = runner_for(base_spec(), options);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  auto result = (*runner)->generate_ids({7, 8, 9}, greedy_tokens(3));
  ASSERT_TRUE(result.ok());
  auto plain = runner_for(base_spec());
  EXPECT_EQ(result->token_ids, (*plain)->generate_ids({7, 8, 9}, greedy_tokens(3))->token_ids);
  options.allocator = "nonexistent";
  auto bad = runner_for(base_spec(), options);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("unknown buffer allocator 'nonexistent'"), std::string::npos);
}

// ---- generation ----

TEST(Generation, CapacityCheckedBeforeAnySideEffect) {
  auto runner = std::move(runner_for(base_spec())).value();  // context 48
  auto first = runner->generate_ids({1, 2, 3, 4, 5, 6}, greedy_tokens(4));
  ASSERT_TRUE(first.ok());
  const int64_t position = runner->position();
  auto too_long = runner->generate_ids(std::vector<int64_t>(30, 7), greedy_tokens(20));
  ASSERT_FALSE(too_long.ok());
  EXPECT_EQ(too_long.error().code(), ErrorCode::kCapacity);
  EXPECT_NE(too_long.error().message().find("context is 48"), std::string::npos) << too_long.error().message();
  EXPECT_EQ(runner->position(), position);
  // The session goes on exactly as if the failed call never happened.
  auto second = runner->generate_ids({9, 10}, greedy_tokens(4));
  auto fresh = std::move(runner_for(base_spec())).value();
  ASSERT_TRUE(fresh->generate_ids({1, 2, 3, 4, 5, 6}, greedy_tokens(4)).ok());
  auto expected = fresh->generate_ids({9, 10}, greedy_tokens(4));
  ASSERT_TRUE(second.ok() && expected.ok());
  EXPECT_EQ(second->token_ids, expected->token_ids);
}

TEST(Generation, ChunkedPrefillMatchesTokenByTokenDecode) {
  const std::vector<int64_t> prompt{1, 5, 9, 13, 17, 21, 25, 29, 33, 37, 41};  // 2 chunks + 3 tail
  for (auto policy : {llm::TailPolicy::kDecode, llm::TailPolicy::kOverlap}) {
    auto chunked = std::move(runner_for(base_spec())).value();
    auto& io = dynamic_cast<llm::HfStaticIOManager&>(chunked->io_manager());
    io.set_tail_policy(policy);
    // Warm the call-time estimates so the overlap policy can choose a prefill for the tail.
    ASSERT_TRUE(io.forward(prompt, 0).ok());
    ASSERT_TRUE(io.forward(prompt, 0).ok());
    auto logits = io.forward(prompt, 0);
    ASSERT_TRUE(logits.ok());
    std::vector<float> chunked_logits(logits->begin(), logits->end());
    EXPECT_GT(io.prefill_calls(), 0);

    auto stepwise = std::move(runner_for(base_spec())).value();
    auto& io2 = stepwise->io_manager();
    Result<std::span<const float>> step = Error(ErrorCode::kInternal, "unset");
    for (size_t i = 0; i < prompt.size(); ++i) step = io2.forward(std::span<const int64_t>(&prompt[i], 1), i);
    ASSERT_TRUE(step.ok());
    ASSERT_EQ(step->size(), chunked_logits.size());
    for (size_t i = 0; i < chunked_logits.size(); ++i) EXPECT_NEAR(chunked_logits[i], (*step)[i], 1e-5);
  }
}

// A call continues the context or rewinds it; rewinding to position p computes what a fresh
// run of the same first p tokens followed by the new ones computes. A gap is refused.
TEST(Generation, ForwardRewindsButNeverSkipsPositions) {
  const std::vector<int64_t> prefix{3, 1, 4, 1, 5, 9, 2, 6}, first{5, 3, 5}, second{8, 9, 7, 9};
  auto runner = std::move(runner_for(base_spec())).value();
  auto& io = runner->io_manager();
  ASSERT_TRUE(io.forward(prefix, 0).ok());
  ASSERT_TRUE(io.forward(first, 8).ok());
  auto rewound = io.forward(second, 8);  // overwrites positions 8..11
  ASSERT_TRUE(rewound.ok());
  const std::vector<float> rewound_logits(rewound->begin(), rewound->end());

  auto fresh = std::move(runner_for(base_spec())).value();
  std::vector<int64_t> tokens = prefix;
  tokens.insert(tokens.end(), second.begin(), second.end());
  auto expected = fresh->io_manager().forward(tokens, 0);
  ASSERT_TRUE(expected.ok());
  ASSERT_EQ(expected->size(), rewound_logits.size());
  for (size_t i = 0; i < rewound_logits.size(); ++i) EXPECT_NEAR(rewound_logits[i], (*expected)[i], 1e-5) << i;

  auto gap = io.forward(second, 13);  // the caches hold positions [0, 12)
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.error().message().find("forward at position 13, but the caches hold positions [0, 12)"),
            std::string::npos)
      << gap.error().message();
}

TEST(Generation, SameSeedSameTokens) {
  llm::GenerationConfig config;
  config.max_new_tokens = 12;
  config.stop_at_eos = false;
  config.sampler.temperature = 1.5f;
  config.sampler.top_k = 0;
  config.sampler.top_p = 1.0f;
  config.sampler.min_p = 0.0f;
  config.sampler.seed = 42;
  auto a = (*runner_for(base_spec()))->generate_ids({1, 2, 3}, config);
  auto b = (*runner_for(base_spec()))->generate_ids({1, 2, 3}, config);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->token_ids, b->token_ids);
  config.sampler.seed = 43;
  auto c = (*runner_for(base_spec()))->generate_ids({1, 2, 3}, config);
  ASSERT_TRUE(c.ok());
  EXPECT_NE(a->token_ids, c->token_ids);
}

TEST(Generation, MultiTurnKeepsTheCacheAndResetClearsIt) {
  auto session = std::move(runner_for(base_spec())).value();
  auto turn1 = session->generate_ids({1, 10, 20}, greedy_tokens(5));
  ASSERT_TRUE(turn1.ok());
  auto turn2 = session->generate_ids({30, 40}, greedy_tokens(5));
  ASSERT_TRUE(turn2.ok());
  // One fresh call over the whole conversation gives the same second answer.
  std::vector<int64_t> conversation{1, 10, 20};
  conversation.insert(conversation.end(), turn1->token_ids.begin(), turn1->token_ids.end());
  conversation.insert(conversation.end(), {30, 40});
  auto whole = (*runner_for(base_spec()))->generate_ids(conversation, greedy_tokens(5));
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(turn2->token_ids, whole->token_ids);

  session->reset();
  EXPECT_EQ(session->position(), 0);
  auto again = session->generate_ids({1, 10, 20}, greedy_tokens(5));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->token_ids, turn1->token_ids);
}

TEST(Generation, StopsAtEos) {
  auto plain = (*runner_for(base_spec()))->generate_ids({1, 2, 3}, greedy_tokens(6));
  ASSERT_TRUE(plain.ok());
  auto spec = base_spec();
  spec.metadata[keys::kEosIds] = std::vector<int64_t>{plain->token_ids[2]};
  auto config = greedy_tokens(6);
  config.stop_at_eos = true;
  auto stopped = (*runner_for(spec))->generate_ids({1, 2, 3}, config);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(stopped->stop_reason, "eos");
  const auto first = std::find(plain->token_ids.begin(), plain->token_ids.end(), plain->token_ids[2]);
  EXPECT_EQ(stopped->token_ids, std::vector<int64_t>(plain->token_ids.begin(), first));
}

TEST(Generation, RejectsBadRequests) {
  auto runner = std::move(runner_for(base_spec())).value();
  EXPECT_EQ(runner->generate_ids({}, greedy_tokens(3)).error().code(), ErrorCode::kInvalidArgument);
  auto bad_token = runner->generate_ids({1, 96}, greedy_tokens(3));
  ASSERT_FALSE(bad_token.ok());
  EXPECT_NE(bad_token.error().message().find("token id 96"), std::string::npos);
  EXPECT_EQ(runner->position(), 0);
  auto no_tokenizer = runner->generate("hello", greedy_tokens(3));
  ASSERT_FALSE(no_tokenizer.ok());
  EXPECT_NE(no_tokenizer.error().message().find("no tokenizer"), std::string::npos);
}

TEST(StopStringFilter, HoldsBackPossiblePrefixesAndCutsAtTheMatch) {
  llm::StopStringFilter filter({"\nUser:", "END"});
  EXPECT_EQ(filter.push("Hello"), "Hello");
  EXPECT_EQ(filter.push(" wor"), " wor");
  EXPECT_EQ(filter.push("ld\nUs"), "ld");  // "\nUs" could start a stop string
  EXPECT_EQ(filter.push("e"), "");
  EXPECT_EQ(filter.push("r: hi"), "");
  EXPECT_TRUE(filter.stopped());
  llm::StopStringFilter other({"END"});
  EXPECT_EQ(other.push("the EN"), "the ");
  EXPECT_EQ(other.push("d"), "ENd");
  EXPECT_EQ(other.push("E"), "");
  EXPECT_EQ(other.flush(), "E");
  EXPECT_FALSE(other.stopped());
}

// ---- caller hooks: the last step's logits and the per-token callback ----

TEST(RunnerHooks, LastLogitsAreTheReferenceScoresOfTheLastStep) {
  auto runner = std::move(runner_for(base_spec())).value();
  EXPECT_TRUE(runner->last_logits().empty());
  const ReferenceModel reference(small_fixture());
  std::vector<int64_t> tokens{1, 17, 42, 5, 88, 23};

  // No new tokens: the prompt runs through the model and nothing is sampled.
  auto scored = runner->generate_ids(tokens, greedy_tokens(0));
  ASSERT_TRUE(scored.ok()) << scored.error().to_string();
  EXPECT_TRUE(scored->token_ids.empty());
  EXPECT_LE(max_abs_error(runner->last_logits(), reference.forward(tokens).back()), 1e-4);

  // After generating n tokens the model has seen the first n - 1 of them (the last one is
  // sampled from these logits and enters the cache with the next request).
  runner->reset();
  EXPECT_TRUE(runner->last_logits().empty());
  auto generated = runner->generate_ids(tokens, greedy_tokens(4));
  ASSERT_TRUE(generated.ok()) << generated.error().to_string();
  ASSERT_EQ(generated->token_ids.size(), 4u);
  const auto logits = runner->last_logits();
  EXPECT_EQ(std::max_element(logits.begin(), logits.end()) - logits.begin(), generated->token_ids.back());
  tokens.insert(tokens.end(), generated->token_ids.begin(), generated->token_ids.end() - 1);
  EXPECT_LE(max_abs_error(logits, reference.forward(tokens).back()), 1e-4);
}

TEST(RunnerHooks, TokenCallbackSeesEachTokenAndStopsBetweenTokens) {
  auto runner = std::move(runner_for(base_spec())).value();
  const auto whole = runner->generate_ids({1, 2, 3}, greedy_tokens(8));
  ASSERT_TRUE(whole.ok());

  auto fresh = std::move(runner_for(base_spec())).value();
  std::vector<int64_t> seen;
  auto config = greedy_tokens(8);
  config.on_token = [&](int64_t token) {
    seen.push_back(token);
    return seen.size() < 3;
  };
  auto stopped = fresh->generate_ids({1, 2, 3}, config);
  ASSERT_TRUE(stopped.ok()) << stopped.error().to_string();
  EXPECT_EQ(stopped->stop_reason, "callback");
  EXPECT_EQ(seen, std::vector<int64_t>(whole->token_ids.begin(), whole->token_ids.begin() + 3));
  EXPECT_EQ(stopped->token_ids, seen);

  // The session stays usable: the next turn continues exactly as an uninterrupted one would.
  auto next = fresh->generate_ids({9, 10}, greedy_tokens(4));
  auto reference_session = std::move(runner_for(base_spec())).value();
  ASSERT_TRUE(reference_session->generate_ids({1, 2, 3}, greedy_tokens(3)).ok());
  auto expected = reference_session->generate_ids({9, 10}, greedy_tokens(4));
  ASSERT_TRUE(next.ok() && expected.ok());
  EXPECT_EQ(next->token_ids, expected->token_ids);
}

}  // namespace
}  // namespace kestrel::testing
