// A reference backend for delegated programs: the exporter side lowers each partition to a small
// Kestrel program of its own; the runtime side runs it with the portable kernels and reports its
// outputs in reverse (so binding by exported index is exercised). Faults can be injected into
// init and execute.
#pragma once

#include <memory>
#include <set>
#include <string>

#include "kestrel/export/constant_table.h"
#include "kestrel/export/memory_planner.h"
#include "kestrel/export/options.h"
#include "kestrel/export/partitioner.h"
#include "kestrel/export/program_emitter.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"
#include "kestrel/runtime/backend.h"
#include "kestrel/runtime/method.h"
#include "llm/test_programs.h"

namespace kestrel::testing {

// Export side: supports every op except those in `unsupported`; the payload is a program.
class SubprogramExporter : public exporter::BackendExporter {
 public:
  explicit SubprogramExporter(std::set<std::string> unsupported)
      : unsupported_(std::move(unsupported)),
        options_("subprogram", {{"skip_node_op_set", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kStringSet, std::set<std::string>{}, "ops to keep portable", {}},
                                {"skip_node_id_set", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kIntSet, std::set<int64_t>{}, "nodes to keep portable", {}},
                                {"skip_mutable_buffer", exporter::OptionDestination::kPartitioner,
                                 exporter::OptionType::kBool, false, "keep cache writes portable", {}},
                                {"tag", exporter::OptionDestination::kCompileSpec, exporter::OptionType::kString,
                                 std::string("ref"), "a compile spec carried to the runtime", {}}}) {}
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
  Result<runtime::DelegateInstance> init(std::span<const uint8_t> payload, const runtime::CompileSpecs& specs,
                                         const runtime::DelegateContext&) override {
    if (init_calls++ == fail_init_at) return Error(ErrorCode::kUnavailable, "subprogram: init refused (injected)");
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
  Status execute(void* handle, std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    if (execute_calls++ == fail_execute_at)
      return Error(ErrorCode::kUnavailable, "subprogram: execute failed (injected)");
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
  int instances = 0;  // initialized and not yet destroyed
  // Fault injection: the init / execute call with this index (0-based) fails; -1 never.
  int64_t fail_init_at = -1, fail_execute_at = -1;
  int64_t init_calls = 0, execute_calls = 0;
};

// A fixture exported with the subprogram backend (ops in `unsupported` stay portable) and
// loaded with `backend` registered.
struct Delegated {
  std::shared_ptr<runtime::Program> program;
  size_t delegates = 0;
};

inline Delegated export_delegated(const fixtures::FixtureConfig& config, std::set<std::string> unsupported,
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

}  // namespace kestrel::testing
