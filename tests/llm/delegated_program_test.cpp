// Partitioned programs end to end: a reference backend lowers each partition to a small
// Kestrel program of its own (run with the portable kernels) and enumerates its outputs in
// reverse. The delegated program must give the same logits and tokens as the portable one.
#include <gtest/gtest.h>

#include "kestrel/export/constant_table.h"
#include "kestrel/export/memory_planner.h"
#include "kestrel/export/options.h"
#include "kestrel/export/program_emitter.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

// Export side: supports every op except those in `unsupported`; the payload is a program.
class SubprogramExporter : public exporter::BackendExporter {
 public:
  explicit SubprogramExporter(std::set<std::string> unsupported)
      : unsupported_(std::move(unsupported)),
        options_("subprogram", {{"skip_node_op_set", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kStringSet, std::set<std::string>{}, "ops to keep portable"},
                                {"skip_node_id_set", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kIntSet, std::set<int64_t>{}, "nodes to keep portable"},
                                {"skip_mutable_buffer", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kBool, false, "keep cache writes portable"},
                                {"tag", exporter::OptionDestination::kCompileSpec, exporter::OptionType::kString,
                                 std::string("ref"), "a compile spec carried to the runtime"}}) {}
  std::string id() const override { return "subprogram"; }
  const exporter::OptionTable& options() const override { return options_; }
  bool supports(const exporter::Graph&, const exporter::Node& node) const override {
    return unsupported_.count(node.op) == 0;
  }
  Result<std::map<std::string, std::vector<uint8_t>>> build_compile_specs(
      const exporter::OptionMap& options) const override {
    const auto& tag = std::get<std::string>(options.at("tag"));
    return std::map<std::string, std::vector<uint8_t>>{{"tag", {tag.begin(), tag.end()}}};
  }
  Result<std::vector<uint8_t>> preprocess(const exporter::Graph& subgraph,
                                          const std::map<std::string, std::vector<uint8_t>>&) const override {
    exporter::Graph graph = subgraph;
    // Weights stay inputs of the subprogram: the runtime passes views of the main program's
    // constants, so nothing is copied into the payload.
    for (exporter::ValueId id : graph.inputs()) {
      auto& value = graph.value(id);
      if (value.input_kind == exporter::InputKind::kParameter || value.input_kind == exporter::InputKind::kConstant) {
        value.input_kind = exporter::InputKind::kUser;
        value.data = nullptr;
      }
    }
    exporter::ConstantTable constants;
    KESTREL_RETURN_IF_ERROR(exporter::lift_constants(graph, constants));
    KESTREL_ASSIGN_OR_RETURN(auto plan, exporter::plan_memory(graph));
    program::ProgramSpec spec;
    exporter::ProgramEmitter emitter;
    KESTREL_RETURN_IF_ERROR(emitter.add_constants(constants, spec));
    KESTREL_ASSIGN_OR_RETURN(auto method, emitter.emit_method("forward", graph, plan, spec));
    spec.methods.push_back(std::move(method));
    return program::serialize_program(spec);
  }

 private:
  std::set<std::string> unsupported_;
  exporter::OptionTable options_;
};

// Runtime side: loads the payload program and runs it; reports outputs last-to-first.
class SubprogramBackend : public runtime::BackendInterface {
 public:
  struct Instance {
    std::shared_ptr<runtime::Program> program;
    std::unique_ptr<runtime::Method> method;
  };
  std::string_view id() const override { return "subprogram"; }
  Status is_available() const override { return ok_status(); }
  Result<runtime::DelegateInstance> init(std::span<const uint8_t> payload,
                                         const runtime::CompileSpecs& specs) override {
    if (specs.count("tag") == 0) return Error(ErrorCode::kInvalidArgument, "compile spec 'tag' missing");
    KESTREL_ASSIGN_OR_RETURN(auto loaded, program::LoadedProgram::load_bytes(payload));
    KESTREL_ASSIGN_OR_RETURN(auto program, runtime::Program::from_loaded(loaded, kernels::portable_kernel_registry(),
                                                                         nullptr));
    auto instance = std::make_unique<Instance>();
    instance->program = program;
    KESTREL_ASSIGN_OR_RETURN(instance->method, program->load_method("forward"));
    runtime::DelegateInstance result;
    const auto outputs = static_cast<int32_t>(instance->method->num_outputs());
    for (int32_t i = outputs - 1; i >= 0; --i) result.output_order.push_back(i);
    result.handle = instance.release();
    ++instances;
    return result;
  }
  Status execute(void* handle, std::span<const TensorView> inputs, std::span<TensorView> outputs) override {
    auto* instance = static_cast<Instance*>(handle);
    runtime::Method& method = *instance->method;
    if (inputs.size() != method.num_inputs())
      return Error(ErrorCode::kInvalidArgument, "subprogram: wrong input count");
    for (size_t i = 0; i < inputs.size(); ++i) KESTREL_RETURN_IF_ERROR(method.set_input(i, inputs[i]));
    // outputs[k] is the backend's k-th reported output, i.e. method output (n - 1 - k).
    const size_t n = outputs.size();
    for (size_t k = 0; k < n; ++k) KESTREL_RETURN_IF_ERROR(method.set_output(n - 1 - k, outputs[k]));
    return method.execute();
  }
  void destroy(void* handle) override {
    delete static_cast<Instance*>(handle);
    --instances;
  }
  int instances = 0;
};

struct Delegated {
  std::shared_ptr<runtime::Program> program;
  size_t delegates = 0;
};

Delegated export_delegated(const fixtures::FixtureConfig& config, std::set<std::string> unsupported,
                           std::shared_ptr<SubprogramBackend> backend, exporter::OptionMap options = {}) {
  auto exporter_backend = std::make_shared<SubprogramExporter>(std::move(unsupported));
  auto partitioner = exporter::Partitioner::from_options(exporter_backend, options);
  EXPECT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  auto export_options = small_export(4, 48);
  export_options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(partitioner).value()));
  auto spec = export_fixture(config, export_options);
  auto backends = std::make_shared<runtime::BackendRegistry>();
  backends->add(backend);
  return Delegated{load_spec(spec, backends), spec.delegates.size()};
}

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
