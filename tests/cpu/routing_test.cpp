// A token gets bit-identical logits whichever way it reaches the model: in a prefill chunk, in a
// decode step, or recomputed by an overlapping prefill window over positions already in the
// cache. This holds because the optimized kernels compute every output element with the same
// operations whatever the number of rows in the call (and whatever the thread count); the
// test drives a small exported decoder through the hf_static IOManager every way.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "cpu/cpu_test_util.h"
#include "cpu/model_fixture.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::cpu::testing {
namespace {

constexpr int64_t kStep = 5, kContext = 40;
const std::vector<int64_t> kPrompt{1, 17, 42, 99, 3, 150, 7, 88, 123, 5, 61, 199, 12, 77};

std::vector<float> copy(std::span<const float> logits) { return {logits.begin(), logits.end()}; }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Logits of every prompt position, each token through its own decode call.
std::vector<std::vector<float>> decode_route(llm::HfStaticIOManager& io) {
  io.reset();
  std::vector<std::vector<float>> out;
  for (size_t p = 0; p < kPrompt.size(); ++p) {
    auto logits = io.forward(std::span<const int64_t>(&kPrompt[p], 1), static_cast<int64_t>(p));
    EXPECT_TRUE(logits.ok());
    if (!logits.ok()) return out;
    out.push_back(copy(*logits));
  }
  return out;
}

// Every weight dtype with f32 caches, and f32 and q8 weights with f16 caches (keys and values
// are rounded as they are stored, so a chunk's own tokens are read back rounded too).
TEST(Routing, LogitsAreBitIdenticalInPrefillChunksDecodeStepsAndOverlappingTails) {
  const std::vector<std::pair<DType, DType>> cases{{DType::kF32, DType::kF32}, {DType::kF16, DType::kF32},
                                                   {DType::kBF16, DType::kF32}, {DType::kQ8, DType::kF32},
                                                   {DType::kF32, DType::kF16}, {DType::kQ8, DType::kF16}};
  for (const auto& [dtype, cache_dtype] : cases) {
    SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " weights, " << dtype_name(cache_dtype) << " caches");
    const auto program = export_small_model(dtype, kStep, kContext, {}, cache_dtype);
    ASSERT_NE(program, nullptr);
    std::vector<std::vector<float>> first_isa;
    for (Isa isa : simd_isas()) {
      SCOPED_TRACE(isa_label(isa));
      std::vector<std::vector<float>> reference;
      for (int threads : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads");
        auto io = load_io(program, registry(threads, isa));
        ASSERT_NE(io, nullptr);
        io->set_tail_policy(llm::TailPolicy::kDecode);
        const auto stepwise = decode_route(*io);
        ASSERT_EQ(stepwise.size(), kPrompt.size());
        if (reference.empty()) reference = stepwise;
        for (size_t p = 0; p < kPrompt.size(); ++p) EXPECT_TRUE(same_bits(stepwise[p], reference[p])) << "position " << p;

        for (int64_t n = 1; n <= static_cast<int64_t>(kPrompt.size()) - 1; ++n) {
          SCOPED_TRACE(::testing::Message() << "prompt of " << n);
          // Full chunks through prefill, the rest through decode.
          io->reset();
          auto chunked = io->forward(std::span<const int64_t>(kPrompt.data(), n), 0);
          ASSERT_TRUE(chunked.ok());
          EXPECT_TRUE(same_bits(copy(*chunked), reference[n - 1]));
          if (n < kStep) continue;
          // A prefill window over the last kStep positions, all already in the cache (what the
          // overlap tail policy runs), then one more token against the recomputed cache.
          auto overlap = io->forward(std::span<const int64_t>(kPrompt.data() + n - kStep, kStep), n - kStep);
          ASSERT_TRUE(overlap.ok());
          EXPECT_TRUE(same_bits(copy(*overlap), reference[n - 1]));
          auto next = io->forward(std::span<const int64_t>(&kPrompt[n], 1), n);
          ASSERT_TRUE(next.ok());
          EXPECT_TRUE(same_bits(copy(*next), reference[n]));
        }
        EXPECT_GT(io->prefill_calls(), 0);
      }
      // The SIMD sets agree bit for bit too, except bf16 weights with bf16 dot products.
      if (dtype == DType::kBF16 && rounds_bf16_activations(isa)) continue;
      if (first_isa.empty()) first_isa = reference;
      for (size_t p = 0; p < kPrompt.size(); ++p) EXPECT_TRUE(same_bits(reference[p], first_isa[p])) << "position " << p;
    }
  }
}

// A prompt shorter than the prefill step, at the start of a session, runs as one prefill
// window whose first rows fill slots past the prompt: the prompt's last token gets the bits of
// the decode route, and so does every token after it (each overwrites its slot before any
// query reads it), whether the program updates its caches in place or the runner copies.
TEST(Routing, AShortFirstPromptRunsAsOnePrefillWindowWithTheBitsOfDecodeSteps) {
  for (DType cache_dtype : {DType::kF32, DType::kF16}) {
    SCOPED_TRACE(dtype_name(cache_dtype));
    auto spec = small_model_spec(DType::kQ8, kStep, kContext, {}, cache_dtype);
    auto copying_spec = spec;
    copying_spec.metadata.erase(contract::hf_static::kCacheUpdate);
    for (const auto* which : {&spec, &copying_spec}) {
      SCOPED_TRACE(which == &spec ? "updated in place" : "copied by the runner");
      for (int threads : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << threads << " threads");
        auto io = load_io(load_program_spec(*which), registry(threads, best_supported_isa()));
        ASSERT_NE(io, nullptr);
        io->set_tail_policy(llm::TailPolicy::kDecode);
        const auto reference = decode_route(*io);
        ASSERT_EQ(reference.size(), kPrompt.size());
        io->set_tail_policy(llm::TailPolicy::kWindow);
        for (int64_t n = 2; n < kStep; ++n) {
          SCOPED_TRACE(::testing::Message() << "prompt of " << n);
          io->reset();
          const int64_t prefills = io->prefill_calls(), decodes = io->decode_calls();
          auto window = io->forward(std::span<const int64_t>(kPrompt.data(), n), 0);
          ASSERT_TRUE(window.ok()) << window.error().to_string();
          EXPECT_EQ(io->prefill_calls(), prefills + 1);
          EXPECT_EQ(io->decode_calls(), decodes);
          EXPECT_TRUE(same_bits(copy(*window), reference[n - 1]));
          // Past the window's filler slots and beyond, one token at a time.
          for (int64_t p = n; p < kStep + 3; ++p) {
            auto next = io->forward(std::span<const int64_t>(&kPrompt[p], 1), p);
            ASSERT_TRUE(next.ok());
            EXPECT_TRUE(same_bits(copy(*next), reference[p])) << "position " << p;
          }
        }
      }
    }
  }
}

// Before a session has timed its calls, a prefill call of T steps counts as T / 16 decode
// calls: with T = 32, a first prompt of 2 tokens goes through decode, one of 3 through a
// window. Once both are timed, the measured costs decide.
TEST(Routing, AnUntimedSessionTakesTheWindowForTailsAboveASixteenthOfTheStep) {
  const auto program = load_program_spec(small_model_spec(DType::kF32, 32, 64));
  for (int64_t n : {2, 3}) {
    SCOPED_TRACE(::testing::Message() << "prompt of " << n);
    auto io = load_io(program, registry(1, best_supported_isa()));
    ASSERT_NE(io, nullptr);
    ASSERT_TRUE(io->forward(std::span<const int64_t>(kPrompt.data(), n), 0).ok());
    EXPECT_EQ(io->prefill_calls(), n * llm::kUntimedPrefillStepsPerDecodeCall > 32 ? 1 : 0);
    EXPECT_EQ(io->decode_calls(), n * llm::kUntimedPrefillStepsPerDecodeCall > 32 ? 0 : n);
  }
}

// Prefill buckets (steps 3 and 8 besides 5): every prompt length takes its own mix of methods,
// largest step first, and still gets the bits of the one-token-at-a-time route.
TEST(Routing, PrefillBucketsGiveTheBitsOfDecodeSteps) {
  for (DType dtype : {DType::kF32, DType::kQ8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto program = export_small_model(dtype, kStep, kContext, {8, 3});
    ASSERT_NE(program, nullptr);
    for (int threads : {1, 2}) {
      SCOPED_TRACE(::testing::Message() << threads << " threads");
      auto io = load_io(program, registry(threads, best_supported_isa()));
      ASSERT_NE(io, nullptr);
      ASSERT_EQ(io->config().prefill_methods.size(), 3u);
      io->set_tail_policy(llm::TailPolicy::kDecode);
      const auto reference = decode_route(*io);
      ASSERT_EQ(reference.size(), kPrompt.size());
      for (int64_t n = 1; n <= static_cast<int64_t>(kPrompt.size()); ++n) {
        SCOPED_TRACE(::testing::Message() << "prompt of " << n);
        io->reset();
        auto chunked = io->forward(std::span<const int64_t>(kPrompt.data(), n), 0);
        ASSERT_TRUE(chunked.ok()) << chunked.error().to_string();
        EXPECT_TRUE(same_bits(copy(*chunked), reference[n - 1]));
      }
      // The overlapping tail runs the smallest bucket (timed or estimated from a larger one).
      io->set_tail_policy(llm::TailPolicy::kOverlap);
      for (int64_t n : {10, 14}) {
        io->reset();
        auto overlapped = io->forward(std::span<const int64_t>(kPrompt.data(), n), 0);
        ASSERT_TRUE(overlapped.ok());
        EXPECT_TRUE(same_bits(copy(*overlapped), reference[n - 1])) << "prompt of " << n;
      }
    }
  }
}

// Which method each chunk takes: the largest step that fits what is left of the prompt.
TEST(Routing, PrefillBucketsTakeTheLargestStepThatFits) {
  const auto program = export_small_model(DType::kF32, kStep, kContext, {8, 3});
  ASSERT_NE(program, nullptr);
  struct Route {
    int64_t n, by8, by5, by3, decoded;
  };
  for (const Route& route : {Route{14, 1, 1, 0, 1}, Route{13, 1, 1, 0, 0}, Route{12, 1, 0, 1, 1},
                             Route{7, 0, 1, 0, 2}, Route{2, 0, 0, 0, 2}}) {
    SCOPED_TRACE(::testing::Message() << "prompt of " << route.n);
    auto io = load_io(program, registry(1, best_supported_isa()));
    ASSERT_NE(io, nullptr);
    io->set_tail_policy(llm::TailPolicy::kDecode);
    ASSERT_TRUE(io->forward(std::span<const int64_t>(kPrompt.data(), route.n), 0).ok());
    EXPECT_EQ(io->prefill_calls(8), route.by8);
    EXPECT_EQ(io->prefill_calls(5), route.by5);
    EXPECT_EQ(io->prefill_calls(3), route.by3);
    EXPECT_EQ(io->prefill_calls(), route.by8 + route.by5 + route.by3);
    EXPECT_EQ(io->decode_calls(), route.decoded);
  }
}

TEST(Routing, OptimizedLogitsMatchThePortableKernels) {
  // The same program on the portable kernels (the oracle): close, not bitwise.
  for (const auto& [dtype, cache_dtype] : std::vector<std::pair<DType, DType>>{
           {DType::kF32, DType::kF32}, {DType::kQ8, DType::kF32}, {DType::kF32, DType::kF16}}) {
    SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " weights, " << dtype_name(cache_dtype) << " caches");
    const auto program = export_small_model(dtype, kStep, kContext, {}, cache_dtype);
    ASSERT_NE(program, nullptr);
    auto portable = load_io(program, kernels::portable_kernel_registry());
    auto optimized = load_io(program, registry(2, best_supported_isa()));
    ASSERT_NE(portable, nullptr);
    ASSERT_NE(optimized, nullptr);
    auto want = portable->forward(kPrompt, 0);
    ASSERT_TRUE(want.ok());
    const auto expected = copy(*want);
    auto got = optimized->forward(kPrompt, 0);
    ASSERT_TRUE(got.ok());
    std::vector<double> g(got->begin(), got->end()), e(expected.begin(), expected.end());
    if (dtype == DType::kF32) {
      EXPECT_TRUE(all_close(g, e, 1e-4));
    } else {
      // q8 rounds the activations of every linear to 8 bits (each linear is checked against
      // its error bound in linear_test); through the whole model the logits stay close.
      double diff = 0, norm = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        diff += (g[i] - e[i]) * (g[i] - e[i]);
        norm += e[i] * e[i];
      }
      EXPECT_LT(std::sqrt(diff / norm), 0.05) << "relative L2 error";
    }
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
