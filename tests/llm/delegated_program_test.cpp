// Partitioned programs end to end: a reference backend lowers each partition to a small
// Kestrel program of its own (run with the portable kernels) and enumerates its outputs in
// reverse. The delegated program must give the same logits and tokens as the portable one.
#include <gtest/gtest.h>

#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "llm/subprogram_backend.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

std::vector<float> logits_after(llm::Runner& runner, const std::vector<int64_t>& tokens) {
  auto logits = runner.io_manager().forward(tokens, 0);
  EXPECT_TRUE(logits.ok()) << logits.error().to_string();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>{};
}

class DelegatedProgram : public ::testing::TestWithParam<std::set<std::string>> {};

TEST_P(DelegatedProgram, MatchesThePortableProgram) {
  auto config = small_fixture();
  auto backend = std::make_shared<SubprogramBackend>();
  auto delegated = export_delegated(config, GetParam(), backend);
  ASSERT_NE(delegated.program, nullptr);
  EXPECT_GT(delegated.delegates, 0u);
  // Only a cache update run as a kernel is declared in place; inside a delegate it is the
  // backend's affair, and the runner keeps copying.
  const auto& metadata = delegated.program->metadata();
  EXPECT_EQ(std::get<std::string>(metadata.at(contract::hf_static::kCacheUpdate)),
            GetParam().count("index_copy") != 0 ? contract::hf_static::kCacheUpdateInPlace
                                                : contract::hf_static::kCacheUpdateRunner);
  auto portable = load_spec(export_fixture(config, small_export(4, 48)));

  auto delegated_runner = llm::Runner::from_program(delegated.program);
  ASSERT_TRUE(delegated_runner.ok()) << delegated_runner.error().to_string();
  auto portable_runner = llm::Runner::from_program(portable);
  ASSERT_TRUE(portable_runner.ok());
  EXPECT_GT(backend->instances, 0);

  const std::vector<int64_t> prompt{1, 17, 42, 5, 88, 23, 64, 9, 31};
  const auto a = logits_after(**delegated_runner, prompt);
  const auto b = logits_after(**portable_runner, prompt);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << i;

  (*delegated_runner)->reset();
  (*portable_runner)->reset();
  llm::GenerationConfig greedy;
  greedy.max_new_tokens = 8;
  greedy.sampler.temperature = 0;
  greedy.stop_at_eos = false;
  auto x = (*delegated_runner)->generate_ids(prompt, greedy);
  auto y = (*portable_runner)->generate_ids(prompt, greedy);
  ASSERT_TRUE(x.ok() && y.ok()) << (x.ok() ? y.error().to_string() : x.error().to_string());
  EXPECT_EQ(x->token_ids, y->token_ids);
}

INSTANTIATE_TEST_SUITE_P(Splits, DelegatedProgram,
                         ::testing::Values(std::set<std::string>{},                          // one partition
                                           std::set<std::string>{"index_copy"},              // cache update on CPU
                                           std::set<std::string>{"attention", "embedding"},  // several partitions
                                           std::set<std::string>{"silu", "rope", "slice"}),
                         [](const auto& info) {
                           std::string name = "keep";
                           for (const auto& op : info.param) name += "_" + op;
                           return info.param.empty() ? std::string("everything_delegated") : name;
                         });

TEST(DelegatedProgram, SkipOptionsKeepNodesPortable) {
  auto backend = std::make_shared<SubprogramBackend>();
  exporter::OptionMap options{{"skip_node_op_set", std::set<std::string>{"linear"}}};
  auto delegated = export_delegated(small_fixture(), {}, backend, options);
  ASSERT_NE(delegated.program, nullptr);
  size_t linear = 0;
  for (const auto& method : delegated.program->loaded().spec().methods)
    for (const auto& instruction : method.instructions)
      if (const auto* call = std::get_if<program::KernelCall>(&instruction)) linear += call->op == "linear";
  EXPECT_EQ(linear, 2u * (2 * 7 + 1));  // both methods: 7 per layer + lm_head stay portable
}

}  // namespace
}  // namespace kestrel::testing
