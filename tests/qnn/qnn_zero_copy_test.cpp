// Zero-copy I/O end to end: a program exported with shared_buffer=true, run by the runner with
// the rpcmem allocator (over the libcdsprpc shim) on the stand-in. The runner's buffers that
// reach QNN graphs are registered once per (context, address) — the caches prefill and decode
// share, once — every such tensor is bound by its memory handle, everything is deregistered
// when the buffers go, and a second load in the same process starts afresh.
#include <gtest/gtest.h>

#include <set>

#include "backends/qnn/standin/standin_api.h"
#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/backends/qnn/rpcmem_allocator.h"
#include "kestrel/core/log.h"
#include "kestrel/llm/runner.h"
#include "llm/test_programs.h"
#include "qnn/cdsprpc_shim_counters.h"

namespace kestrel::qnn {
namespace {

using kestrel::testing::export_fixture;
using kestrel::testing::load_spec;
using kestrel::testing::small_export;
using kestrel::testing::small_fixture;

program::ProgramSpec shared_buffer_program(bool shared_buffer = true) {
  auto partitioner = QnnPartitioner::from_options({{"shared_buffer", shared_buffer}});
  EXPECT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  auto options = small_export(4, 48);
  options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(partitioner).value()));
  return export_fixture(small_fixture(), options);
}

std::vector<int64_t> greedy_tokens(llm::Runner& runner) {
  llm::GenerationConfig greedy;
  greedy.max_new_tokens = 10;
  greedy.sampler.temperature = 0;
  greedy.stop_at_eos = false;
  auto result = runner.generate_ids({1, 17, 42, 5, 88, 23, 64, 9, 31}, greedy);
  EXPECT_TRUE(result.ok()) << result.error().to_string();
  return result.ok() ? result->token_ids : std::vector<int64_t>{};
}

// How every graph's tensor named `<graph>_<name>` was last bound (graphs prefix their tensors'
// names: QNN wants them unique in a context, and prefill and decode share one).
std::set<QnnMemType> bindings_of(const StandinStats& stats, const std::string& name) {
  std::set<QnnMemType> types;
  for (const auto& [tensor, type] : stats.last_binding)
    if (tensor.size() > name.size() && tensor.compare(tensor.size() - name.size() - 1, std::string::npos, "_" + name) == 0)
      types.insert(type);
  return types;
}

class QnnZeroCopy : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("CDSPRPC_SHIM_FAIL");
    set_log_level(LogLevel::kWarn);
  }
  void TearDown() override { set_qnn_mem_registrar(nullptr); }

  // Loads `spec` with a "qnn" backend on `api` (made the process's registrar) and a runner whose
  // I/O comes from `allocator`.
  Result<std::unique_ptr<llm::Runner>> runner(const program::ProgramSpec& spec, std::shared_ptr<StandinApi> api,
                                              std::shared_ptr<runtime::BufferAllocator> allocator) {
    auto registry = std::make_shared<runtime::BackendRegistry>();
    QnnBackendOptions options;
    options.api = std::move(api);
    register_qnn_backend(*registry, options);
    llm::RunnerOptions runner_options;
    runner_options.allocator_instance = std::move(allocator);
    return llm::Runner::from_program(load_spec(spec, registry), runner_options);
  }

  std::shared_ptr<RpcmemAllocator> rpcmem() {
    RpcmemOptions options;
    options.library_path = KESTREL_CDSPRPC_SHIM;
    return std::make_shared<RpcmemAllocator>(options);
  }
};

TEST_F(QnnZeroCopy, RunnerBuffersAreRegisteredOnceBoundByHandleAndDeregisteredOnFree) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  const auto spec = shared_buffer_program();
  const auto expected = greedy_tokens(**llm::Runner::from_program(load_spec(export_fixture(small_fixture(), small_export(4, 48)))));
  const int64_t layers = small_fixture().num_layers;
  auto api = std::make_shared<StandinApi>();
  auto allocator = rpcmem();
  ASSERT_TRUE(allocator->available()) << allocator->unavailable_reason();
  {
    auto r = runner(spec, api, allocator);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    // What reaches the graphs: the 2L caches (shared by prefill and decode: registered once),
    // and per method the logits and 2L new cache slices. Tokens and positions reach only the
    // CPU casts to i32, so they are not registered.
    const uint64_t expected_registrations = 2 * layers + 2 * (1 + 2 * layers);
    EXPECT_EQ(allocator->live_registrations(), expected_registrations);
    EXPECT_EQ(api->stats().registrations, expected_registrations);
    EXPECT_EQ(api->stats().live_registrations, expected_registrations);

    EXPECT_EQ(greedy_tokens(**r), expected);
    const auto stats = api->stats();
    EXPECT_GT(stats.executes, 0u);
    EXPECT_GT(stats.memhandle_bindings, 0u);
    for (const char* tensor : {"k_cache_0", "v_cache_1", "logits", "k_new_0", "v_new_1"})
      EXPECT_EQ(bindings_of(stats, tensor), std::set<QnnMemType>{QnnMemType::kMemHandle}) << tensor;
    EXPECT_EQ(bindings_of(stats, "tokens_i32"), std::set<QnnMemType>{QnnMemType::kRaw})
        << "made by the CPU cast, in the arena";
    EXPECT_EQ(stats.registrations, expected_registrations) << "running registered nothing more";
  }
  // The runner freed its buffers: every registration went with them, then the context.
  EXPECT_EQ(allocator->live_registrations(), 0u);
  EXPECT_EQ(allocator->live_allocations(), 0u);
  EXPECT_EQ(api->stats().live_registrations, 0u);
  EXPECT_EQ(api->stats().contexts_live, 0u);
  EXPECT_EQ(shim.counters().bad_frees, 0);

  // A second load in the same process: a new context, registered afresh, same tokens.
  auto again = runner(spec, api, allocator);
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(greedy_tokens(**again), expected);
  EXPECT_EQ(api->stats().contexts_created, 2u);
  EXPECT_EQ(api->stats().live_registrations, 2 * layers + 2 * (1 + 2 * layers));
}

TEST_F(QnnZeroCopy, SharedBufferNeedsRegisteredMemory) {
  auto r = runner(shared_buffer_program(), std::make_shared<StandinApi>(), nullptr);  // heap buffers
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  llm::GenerationConfig config;
  config.max_new_tokens = 1;
  auto result = (*r)->generate_ids({1, 2, 3}, config);
  ASSERT_FALSE(result.ok());
  EXPECT_NE(result.error().message().find("shared_buffer=true"), std::string::npos) << result.error().message();
  EXPECT_NE(result.error().message().find("--allocator rpcmem"), std::string::npos);
}

TEST_F(QnnZeroCopy, WithoutSharedBufferNothingIsRegistered) {
  auto api = std::make_shared<StandinApi>();
  auto allocator = rpcmem();
  auto r = runner(shared_buffer_program(false), api, allocator);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_FALSE(greedy_tokens(**r).empty());
  EXPECT_EQ(api->stats().registrations, 0u);
  EXPECT_EQ(api->stats().memhandle_bindings, 0u);
  EXPECT_GT(api->stats().raw_bindings, 0u);
}

}  // namespace
}  // namespace kestrel::qnn
