// Faults at run time: an allocator that fails mid-load, a backend whose init or execute fails,
// non-finite logits, a stream callback that stops, and requests the runner must refuse. After
// each, the runner (or a fresh load) works and gives the tokens an undisturbed run gives, every
// buffer and delegate instance is released (LeakSanitizer checks the rest in the sanitizer
// build), and the session is exactly what kestrel/llm/runner.h says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "kestrel/runtime/heap_allocator.h"
#include "llm/subprogram_backend.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

const std::vector<int64_t> kPrompt{1, 17, 42, 5, 88, 23, 64, 9, 31};

const program::ProgramSpec& portable_spec() {
  static const program::ProgramSpec spec = export_fixture(small_fixture(), small_export(4, 48));
  return spec;
}

// What an undisturbed runner generates after `prompt`.
std::vector<int64_t> reference_tokens(const std::vector<int64_t>& prompt, int64_t n) {
  auto runner = llm::Runner::from_program(load_spec(portable_spec()));
  EXPECT_TRUE(runner.ok());
  auto result = (*runner)->generate_ids(prompt, greedy_tokens(n));
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  return result.ok() ? result->token_ids : std::vector<int64_t>{};
}

// ---- the allocator hook ----

// Heap memory through the hook, with every call counted and one call failing on request.
class FaultyAllocator final : public runtime::BufferAllocator {
 public:
  enum class Fault { kNone, kBindFails, kMisaligned, kDeclines };
  std::string_view name() const override { return "faulty"; }
  size_t alignment() const override { return 64; }
  void* allocate(size_t bytes, const runtime::TensorInfo&) override {
    const bool fault = allocate_calls++ == fault_at;
    if (fault && this->fault == Fault::kDeclines) return nullptr;
    void* base = runtime::aligned_heap_allocate(bytes + 64, 64);
    // A misaligned buffer must be refused and handed back through free().
    void* buffer = static_cast<uint8_t*>(base) + (fault && this->fault == Fault::kMisaligned ? 8 : 0);
    live[buffer] = base;
    return buffer;
  }
  Status bind(void*, const std::string& method, size_t index, bool) override {
    if (bind_calls++ == fault_at && fault == Fault::kBindFails)
      return make_error(ErrorCode::kUnavailable, "faulty: cannot register buffer {} of '{}' (injected)", index,
                        method);
    return ok_status();
  }
  void free(void* buffer) override {
    auto it = live.find(buffer);
    ASSERT_NE(it, live.end()) << "freed a buffer this allocator did not hand out";
    runtime::aligned_heap_free(it->second);
    live.erase(it);
  }

  Fault fault = Fault::kNone;
  int64_t fault_at = -1;
  int64_t allocate_calls = 0, bind_calls = 0;
  std::map<void*, void*> live;  // returned pointer -> heap block
};

Result<std::unique_ptr<llm::Runner>> load_with(std::shared_ptr<FaultyAllocator> allocator) {
  llm::RunnerOptions options;
  options.allocator_instance = std::move(allocator);
  return llm::Runner::from_program(load_spec(portable_spec()), options);
}

TEST(RuntimeFaults, AnAllocatorFailingAtAnyStepOfTheLoadReleasesEverything) {
  auto counter = std::make_shared<FaultyAllocator>();
  { ASSERT_TRUE(load_with(counter).ok()); }
  ASSERT_GT(counter->bind_calls, 10);
  EXPECT_TRUE(counter->live.empty());
  const auto expected = reference_tokens(kPrompt, 6);

  for (auto fault : {FaultyAllocator::Fault::kBindFails, FaultyAllocator::Fault::kMisaligned}) {
    const int64_t calls = fault == FaultyAllocator::Fault::kBindFails ? counter->bind_calls : counter->allocate_calls;
    for (int64_t k = 0; k < calls; ++k) {
      SCOPED_TRACE(::testing::Message() << "fault " << static_cast<int>(fault) << " at call " << k);
      auto allocator = std::make_shared<FaultyAllocator>();
      allocator->fault = fault;
      allocator->fault_at = k;
      {
        auto runner = load_with(allocator);
        ASSERT_FALSE(runner.ok());
        EXPECT_NE(runner.error().message().find(fault == FaultyAllocator::Fault::kBindFails ? "(injected)"
                                                                                            : "not aligned to 64"),
                  std::string::npos)
            << runner.error().message();
      }
      EXPECT_TRUE(allocator->live.empty()) << allocator->live.size() << " buffers were not freed";
      // The same allocator, no longer failing, serves a working runner.
      allocator->fault = FaultyAllocator::Fault::kNone;
      auto again = load_with(allocator);
      ASSERT_TRUE(again.ok()) << again.error().to_string();
      auto result = (*again)->generate_ids(kPrompt, greedy_tokens(6));
      ASSERT_TRUE(result.ok()) << result.error().to_string();
      EXPECT_EQ(result->token_ids, expected);
    }
  }
}

TEST(RuntimeFaults, DeclinedAllocationsFallBackToTheHeap) {
  const auto expected = reference_tokens(kPrompt, 6);
  for (int64_t k : {0, 3, 7}) {
    auto allocator = std::make_shared<FaultyAllocator>();
    allocator->fault = FaultyAllocator::Fault::kDeclines;
    allocator->fault_at = k;
    auto runner = load_with(allocator);
    ASSERT_TRUE(runner.ok()) << runner.error().to_string();
    auto result = (*runner)->generate_ids(kPrompt, greedy_tokens(6));
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->token_ids, expected);
  }
}

// ---- a backend that fails ----

TEST(RuntimeFaults, ABackendWhoseInitFailsLeavesNoInstanceBehind) {
  auto counter = std::make_shared<SubprogramBackend>();
  auto program = export_delegated(small_fixture(), {"attention", "embedding"}, counter).program;
  ASSERT_NE(program, nullptr);
  { ASSERT_TRUE(llm::Runner::from_program(program).ok()); }
  ASSERT_GT(counter->init_calls, 2) << "several delegates per method";
  EXPECT_EQ(counter->instances, 0);

  for (int64_t k = 0; k < counter->init_calls; ++k) {
    SCOPED_TRACE(k);
    auto backend = std::make_shared<SubprogramBackend>();
    backend->fail_init_at = k;
    auto delegated = export_delegated(small_fixture(), {"attention", "embedding"}, backend).program;
    {
      auto runner = llm::Runner::from_program(delegated);
      ASSERT_FALSE(runner.ok());
      EXPECT_NE(runner.error().message().find("initializing backend 'subprogram'"), std::string::npos)
          << runner.error().message();
      EXPECT_NE(runner.error().message().find("init refused (injected)"), std::string::npos);
    }
    EXPECT_EQ(backend->instances, 0) << "every initialized instance is destroyed";
    auto again = llm::Runner::from_program(delegated);  // init k has passed: this load works
    ASSERT_TRUE(again.ok()) << again.error().to_string();
  }
}

TEST(RuntimeFaults, ABackendWhoseExecuteFailsResetsTheSessionAndRecovers) {
  const auto expected = reference_tokens(kPrompt, 8);
  // How many delegate calls the prompt takes, and the whole request.
  int64_t prompt_calls = 0, all_calls = 0;
  {
    auto backend = std::make_shared<SubprogramBackend>();
    auto runner = llm::Runner::from_program(export_delegated(small_fixture(), {}, backend).program);
    ASSERT_TRUE(runner.ok());
    ASSERT_TRUE((*runner)->generate_ids(kPrompt, greedy_tokens(1)).ok());
    prompt_calls = backend->execute_calls;
    (*runner)->reset();
    ASSERT_TRUE((*runner)->generate_ids(kPrompt, greedy_tokens(8)).ok());
    all_calls = backend->execute_calls - prompt_calls;
    ASSERT_GT(all_calls, prompt_calls + 3);
  }
  for (int64_t step : {int64_t{0}, prompt_calls - 1, prompt_calls, prompt_calls + 2, all_calls - 1}) {
    SCOPED_TRACE(step);
    auto backend = std::make_shared<SubprogramBackend>();
    auto program = export_delegated(small_fixture(), {}, backend).program;
    auto runner = llm::Runner::from_program(program);
    ASSERT_TRUE(runner.ok());
    backend->fail_execute_at = step;
    auto failed = (*runner)->generate_ids(kPrompt, greedy_tokens(8));
    ASSERT_FALSE(failed.ok());
    EXPECT_NE(failed.error().message().find("execute failed (injected)"), std::string::npos)
        << failed.error().message();
    EXPECT_NE(failed.error().message().find(step < prompt_calls ? "processing the prompt" : "generation step"),
              std::string::npos)
        << failed.error().message();
    // As runner.h says: the session is reset, the runner usable.
    EXPECT_EQ((*runner)->position(), 0);
    EXPECT_TRUE((*runner)->session_tokens().empty());
    auto again = (*runner)->generate_ids(kPrompt, greedy_tokens(8));
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    EXPECT_EQ(again->token_ids, expected);
  }
}

// ---- non-finite logits ----

// Overwrites the f32 values [first, first + count) of tensor `name` in the checkpoint `model`
// (count 0: to the tensor's end) with `value`.
void overwrite_f32(const std::string& model, const std::string& name, uint64_t first, uint64_t count, float value) {
  std::fstream f(model + "/model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
  uint64_t length = 0;
  f.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, '\0');
  f.read(header.data(), static_cast<std::streamsize>(length));
  const auto entry = nlohmann::json::parse(header)[name];
  ASSERT_EQ(entry["dtype"], "F32") << name;
  const uint64_t begin = entry["data_offsets"][0].get<uint64_t>() + first * 4;
  const uint64_t end = count == 0 ? entry["data_offsets"][1].get<uint64_t>() : begin + count * 4;
  f.seekp(static_cast<std::streamoff>(8 + length + begin));
  for (uint64_t at = begin; at < end; at += 4) f.write(reinterpret_cast<const char*>(&value), 4);
  ASSERT_TRUE(f.good()) << name;
}

// A runner over the program exported (portable kernels) from the checkpoint `model`.
Result<std::unique_ptr<llm::Runner>> export_and_run(const std::string& model) {
  KESTREL_ASSIGN_OR_RETURN(auto checkpoint, exporter::load_checkpoint(model));
  KESTREL_ASSIGN_OR_RETURN(auto spec, exporter::export_program(checkpoint, small_export(4, 48)));
  return llm::Runner::from_program(load_spec(spec));
}

TEST(RuntimeFaults, NonFiniteLogitsAreAnErrorNamingTheMethodAndPosition) {
  TempDir dir;
  const std::string model = dir.file("model");
  ASSERT_TRUE(fixtures::write_hf_checkpoint(model, small_fixture()).ok());
  // Poison the final norm (f32): every logit becomes NaN.
  ASSERT_NO_FATAL_FAILURE(overwrite_f32(model, "model.norm.weight", 0, 0, std::numeric_limits<float>::quiet_NaN()));
  auto runner = export_and_run(model);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  struct Case {
    std::vector<int64_t> prompt;
    std::string method;
    std::string position;  // of the first call's last row
  };
  for (const Case& c : {Case{kPrompt, "prefill", "at position 3"}, Case{{7}, "decode", "at position 0"}}) {
    auto result = (*runner)->generate_ids(c.prompt, greedy_tokens(3));
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), ErrorCode::kCorrupt);
    const std::string& message = result.error().message();
    EXPECT_NE(message.find("method '" + c.method + "' returned a non-finite logit (nan)"), std::string::npos)
        << message;
    EXPECT_NE(message.find(c.position), std::string::npos) << message;
    EXPECT_EQ((*runner)->position(), 0);
  }
}

TEST(RuntimeFaults, OneBrokenTokenLogitIsFoundAndNamed) {
  // One row of an untied lm_head far past the float range: the logit of that token id alone
  // overflows (to inf, or to nan where both signs do), and the error names that token id.
  constexpr int64_t kPoisonedId = 37;
  TempDir dir;
  const std::string model = dir.file("model");
  auto config = small_fixture();
  config.tie_word_embeddings = false;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(model, config).ok());
  ASSERT_NO_FATAL_FAILURE(overwrite_f32(model, "lm_head.weight", kPoisonedId * config.hidden_size,
                                        static_cast<uint64_t>(config.hidden_size), 3.0e38f));
  auto runner = export_and_run(model);
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  auto result = (*runner)->generate_ids({7}, greedy_tokens(3));
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(result.error().message().find("for token id " + std::to_string(kPoisonedId) + " at position 0"),
            std::string::npos)
      << result.error().message();
}

// ---- the stream callback stops ----

TEST(RuntimeFaults, AStreamCallbackThatStopsKeepsTheSessionConsistent) {
  auto config = small_fixture();
  config.vocab_size = 288;  // byte tokens and merges
  const std::string tokenizer = fixtures::build_byte_level_bpe_tokenizer_json(fixtures::default_corpus(),
                                                                              config.vocab_size, {"<s>", "</s>"});
  const auto spec = export_fixture(config, small_export(4, 48), false, tokenizer);
  auto runner = llm::Runner::from_program(load_spec(spec));
  ASSERT_TRUE(runner.ok()) << runner.error().to_string();
  int pieces = 0;
  auto stopped = (*runner)->generate("the bird", greedy_tokens(20), [&](const std::string&) { return ++pieces < 2; });
  ASSERT_TRUE(stopped.ok()) << stopped.error().to_string();
  EXPECT_EQ(stopped->stop_reason, "callback");
  EXPECT_EQ(pieces, 2);
  EXPECT_LT(stopped->token_ids.size(), 20u);
  // The session holds the prompt and every generated token; the last one waits for the next turn.
  std::vector<int64_t> session = stopped->prompt_token_ids;
  session.insert(session.end(), stopped->token_ids.begin(), stopped->token_ids.end());
  EXPECT_EQ((*runner)->session_tokens(), session);
  EXPECT_EQ((*runner)->position(), static_cast<int64_t>(session.size()) - 1);

  // Going on gives what one uninterrupted request over the same tokens gives.
  const std::vector<int64_t> more{40, 41};
  auto next = (*runner)->generate_ids(more, greedy_tokens(5));
  ASSERT_TRUE(next.ok()) << next.error().to_string();
  auto fresh = llm::Runner::from_program(load_spec(spec));
  std::vector<int64_t> all = session;
  all.insert(all.end(), more.begin(), more.end());
  auto expected = (*fresh)->generate_ids(all, greedy_tokens(5));
  ASSERT_TRUE(expected.ok());
  EXPECT_EQ(next->token_ids, expected->token_ids);
}

// ---- requests refused before any side effect ----

TEST(RuntimeFaults, RefusedRequestsLeaveTheSessionUntouched) {
  auto runner = llm::Runner::from_program(load_spec(portable_spec()));
  ASSERT_TRUE(runner.ok());
  auto first = (*runner)->generate_ids(kPrompt, greedy_tokens(4));
  ASSERT_TRUE(first.ok());
  const auto session = (*runner)->session_tokens();
  const int64_t position = (*runner)->position();

  struct Refusal {
    std::string name;
    llm::GenerationConfig config;
    std::vector<int64_t> prompt;
    ErrorCode code;
    std::string message;
  };
  std::vector<Refusal> refusals;
  refusals.push_back({"INT64_MAX new tokens", greedy_tokens(std::numeric_limits<int64_t>::max()), {3}, ErrorCode::kCapacity,
                      "needs 9223372036854775820 positions"});
  refusals.push_back({"one more than fits", greedy_tokens(48 - position - 1 + 1), {3}, ErrorCode::kCapacity, "context is 48"});
  auto stop = greedy_tokens(4);
  stop.stop_strings = {"ok", ""};
  refusals.push_back({"empty stop string", stop, {3}, ErrorCode::kInvalidArgument, "stop string 2 is empty"});
  auto nan = greedy_tokens(4);
  nan.sampler.temperature = std::numeric_limits<float>::quiet_NaN();
  refusals.push_back({"NaN temperature", nan, {3}, ErrorCode::kInvalidArgument, "temperature"});
  refusals.push_back({"id outside the vocabulary", greedy_tokens(4), {3, 96}, ErrorCode::kInvalidArgument,
                      "prompt token id 96 is outside"});
  refusals.push_back({"empty prompt", greedy_tokens(4), {}, ErrorCode::kInvalidArgument, "the prompt is empty"});
  for (const Refusal& r : refusals) {
    SCOPED_TRACE(r.name);
    auto result = (*runner)->generate_ids(r.prompt, r.config);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(result.error().code(), r.code);
    EXPECT_NE(result.error().message().find(r.message), std::string::npos) << result.error().message();
    EXPECT_EQ((*runner)->session_tokens(), session);
    EXPECT_EQ((*runner)->position(), position);
  }
  // The pending token counts against capacity: exactly what fits still runs.
  auto fits = (*runner)->generate_ids({3}, greedy_tokens(48 - position - 1));
  ASSERT_TRUE(fits.ok()) << fits.error().to_string();
  EXPECT_EQ((*runner)->position(), 48) << "the last sampled token is not fed back";
}

TEST(RuntimeFaults, ATokenizerFormatThatIsNotAStringIsATypeError) {
  auto spec = portable_spec();
  spec.metadata[contract::hf_static::kTokenizerFormat] = int64_t{1};
  auto runner = llm::Runner::from_program(load_spec(spec));
  ASSERT_FALSE(runner.ok());
  EXPECT_NE(runner.error().message().find("metadata 'tokenizer_format' must be a string"), std::string::npos)
      << runner.error().message();
}

}  // namespace
}  // namespace kestrel::testing
