// Whole programs exported with --backend qnn, run by the runner on the CPU stand-in, against
// the same checkpoint exported without a backend: the logits agree to 1e-4 and greedy decoding
// gives the same tokens, whatever the partitioning. Plus what the program file holds: one copy
// of the weights, node placements for skip_node_id_set.
#include <gtest/gtest.h>

#include <filesystem>

#include "backends/qnn/standin/standin_api.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/describe.h"
#include "kestrel/program/writer.h"
#include "llm/test_programs.h"

namespace kestrel::qnn {
namespace {

using kestrel::testing::export_fixture;
using kestrel::testing::load_spec;
using kestrel::testing::small_export;
using kestrel::testing::small_fixture;

exporter::ExportOptions qnn_export(const exporter::OptionMap& options, int64_t step = 4, int64_t context = 48) {
  auto partitioner = QnnPartitioner::from_options(options);
  EXPECT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  auto export_options = small_export(step, context);
  export_options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(partitioner).value()));
  return export_options;
}

// A registry whose "qnn" backend runs on `api`.
std::shared_ptr<runtime::BackendRegistry> standin_backends(std::shared_ptr<StandinApi> api) {
  auto registry = std::make_shared<runtime::BackendRegistry>();
  QnnBackendOptions options;
  options.api = std::move(api);
  register_qnn_backend(*registry, options);
  return registry;
}

std::vector<float> logits_after(llm::Runner& runner, const std::vector<int64_t>& tokens) {
  auto logits = runner.io_manager().forward(tokens, 0);
  EXPECT_TRUE(logits.ok()) << logits.error().to_string();
  return logits.ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>{};
}

struct Variant {
  std::string name;
  exporter::OptionMap options;
  DType dtype = DType::kF32;
  std::string logits = "last";
};

void PrintTo(const Variant& variant, std::ostream* out) { *out << variant.name; }

class QnnProgram : public ::testing::TestWithParam<Variant> {};

TEST_P(QnnProgram, MatchesThePortableProgramOnTheStandIn) {
  const Variant& variant = GetParam();
  auto config = small_fixture();
  auto portable_options = small_export(4, 48);
  portable_options.dtype = variant.dtype;
  portable_options.logits = variant.logits;
  auto qnn_options = qnn_export(variant.options);
  qnn_options.dtype = variant.dtype;
  qnn_options.logits = variant.logits;
  const auto qnn_spec = export_fixture(config, qnn_options);
  ASSERT_FALSE(qnn_spec.delegates.empty());
  auto api = std::make_shared<StandinApi>();
  auto delegated = load_spec(qnn_spec, standin_backends(api));
  auto portable = load_spec(export_fixture(config, portable_options));
  ASSERT_TRUE(delegated && portable);

  auto qnn_runner = llm::Runner::from_program(delegated);
  ASSERT_TRUE(qnn_runner.ok()) << qnn_runner.error().to_string();
  auto portable_runner = llm::Runner::from_program(portable);
  ASSERT_TRUE(portable_runner.ok());

  // 9 tokens: two prefill chunks of 4 and one decode step.
  const std::vector<int64_t> prompt{1, 17, 42, 5, 88, 23, 64, 9, 31};
  const auto a = logits_after(**qnn_runner, prompt);
  const auto b = logits_after(**portable_runner, prompt);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-4) << i;

  (*qnn_runner)->reset();
  (*portable_runner)->reset();
  llm::GenerationConfig greedy;
  greedy.max_new_tokens = 12;
  greedy.sampler.temperature = 0;
  greedy.stop_at_eos = false;
  auto x = (*qnn_runner)->generate_ids(prompt, greedy);
  auto y = (*portable_runner)->generate_ids(prompt, greedy);
  ASSERT_TRUE(x.ok() && y.ok()) << (x.ok() ? y.error().to_string() : x.error().to_string());
  EXPECT_EQ(x->token_ids, y->token_ids);
  const auto stats = api->stats();
  EXPECT_GT(stats.executes, 0u);
  EXPECT_EQ(stats.contexts_live, 1u) << "prefill's and decode's graphs share one context";
  EXPECT_EQ(stats.memhandle_bindings, 0u) << "no shared buffers without shared_buffer";
}

INSTANTIATE_TEST_SUITE_P(
    Partitionings, QnnProgram,
    ::testing::Values(Variant{"everything_delegated", {}},
                      Variant{"cache_update_on_cpu", {{"skip_node_op_set", std::set<std::string>{"index_copy"}}}},
                      Variant{"skip_mutable_buffer", {{"skip_mutable_buffer", true}}},
                      Variant{"node_ids_kept_portable", {{"skip_node_id_set", std::set<int64_t>{1, 3, 15, 40}}}},
                      Variant{"attention_and_rope_on_cpu", {{"skip_node_op_set", std::set<std::string>{"attention", "rope"}}}},
                      Variant{"f16_weights", {}, DType::kF16},
                      Variant{"all_logits", {}, DType::kF32, "all"}),
    [](const auto& info) { return info.param.name; });

// The stand-in numbers its graph outputs in reverse: every multi-output delegate reports a
// non-identity order, so binding by exported index is what makes the programs above agree.
TEST(QnnProgramLoad, DelegatesReportTheirOutputsOutOfExportedOrder) {
  const auto spec = export_fixture(small_fixture(), qnn_export({}));
  auto program = load_spec(spec, standin_backends(std::make_shared<StandinApi>()));
  ASSERT_NE(program, nullptr);
  for (const auto& delegate : spec.delegates) {
    auto payload = parse_qnn_payload(*spec.segments[delegate.payload_segment].held());
    ASSERT_TRUE(payload.ok());
    EXPECT_GT(payload->outputs.size(), 1u);
  }
  auto backends = standin_backends(std::make_shared<StandinApi>());
  auto backend = backends->find("qnn");
  ASSERT_TRUE(backend.ok());
  const auto& method = *program->loaded().find_method("decode");
  const auto& call = std::get<program::DelegateCall>(method.instructions.back());
  runtime::DelegateContext where;
  where.method = "decode";
  for (int32_t index : call.inputs) {
    const auto& value = method.values[index];
    TensorView view = TensorView::contiguous(value.dtype, Shape(std::span<const int64_t>(value.shape)), nullptr);
    if (value.kind == program::ValueKind::kConstant)
      view.data = const_cast<uint8_t*>(program->loaded().constant_bytes(value).data());
    where.constants.push_back(view);
    where.method_inputs.push_back(-1);
  }
  where.method_outputs.assign(call.outputs.size(), -1);
  const auto& delegate = spec.delegates[call.delegate];
  auto instance = (*backend)->init(program->loaded().segment(delegate.payload_segment), delegate.compile_specs, where);
  ASSERT_TRUE(instance.ok()) << instance.error().to_string();
  std::vector<int32_t> reversed;
  for (size_t k = call.outputs.size(); k-- > 0;) reversed.push_back(static_cast<int32_t>(k));
  EXPECT_EQ(instance->output_order, reversed);
  (*backend)->destroy(instance->handle);

  // A payload that references a constant the method does not pass is refused, naming it.
  where.constants.assign(where.constants.size(), TensorView{});
  auto refused = (*backend)->init(program->loaded().segment(delegate.payload_segment), delegate.compile_specs, where);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("references a program constant"), std::string::npos)
      << refused.error().message();
}

// Payloads reference the program's constants: the QNN program holds one copy of the weights,
// shared by prefill's and decode's graphs.
TEST(QnnProgramFile, WeightsAreStoredOnce) {
  kestrel::testing::TempDir dir;
  auto config = small_fixture();
  config.hidden_size = 64;
  config.intermediate_size = 128;
  config.vocab_size = 256;
  const auto portable = export_fixture(config, small_export(8, 64));
  const auto qnn = export_fixture(config, qnn_export({}, 8, 64));
  const auto embedded = export_fixture(config, qnn_export({{"embed_parameters", true}}, 8, 64));
  ASSERT_TRUE(program::write_program(portable, dir.file("portable.kst")).ok());
  ASSERT_TRUE(program::write_program(qnn, dir.file("qnn.kst")).ok());
  ASSERT_TRUE(program::write_program(embedded, dir.file("embedded.kst")).ok());
  const double portable_bytes = static_cast<double>(std::filesystem::file_size(dir.file("portable.kst")));
  const double qnn_bytes = static_cast<double>(std::filesystem::file_size(dir.file("qnn.kst")));
  const double embedded_bytes = static_cast<double>(std::filesystem::file_size(dir.file("embedded.kst")));
  EXPECT_LE(qnn_bytes, 1.2 * portable_bytes) << qnn_bytes << " vs " << portable_bytes;
  EXPECT_GT(embedded_bytes, 2.5 * portable_bytes) << "each method's payload copying the weights";
  for (const auto& delegate : qnn.delegates) {
    auto payload = parse_qnn_payload(*qnn.segments[delegate.payload_segment].held());
    ASSERT_TRUE(payload.ok());
    EXPECT_TRUE(payload->blob.empty());
    for (const auto& value : payload->values) {
      if (value.kind == QnnValueKind::kParameter || value.kind == QnnValueKind::kConstant) {
        EXPECT_GE(value.input_index, 0) << value.name << " references its delegate input";
      }
    }
  }
}

// Node ids with their op and placement, in the export report and in the program (what
// `kestrel export --show-nodes` and `kestrel inspect` print).
TEST(QnnProgramFile, NodePlacementsNameWhyANodeStaysPortable) {
  auto options = qnn_export({{"skip_node_op_set", std::set<std::string>{"index_copy"}},
                             {"skip_node_id_set", std::set<int64_t>{3}}});
  auto checkpoint_dir = kestrel::testing::TempDir();
  ASSERT_TRUE(fixtures::write_hf_checkpoint(checkpoint_dir.file("model"), small_fixture()).ok());
  auto checkpoint = exporter::load_checkpoint(checkpoint_dir.file("model"));
  ASSERT_TRUE(checkpoint.ok());
  exporter::ExportReport report;
  auto spec = exporter::export_program(*checkpoint, options, &report);
  ASSERT_TRUE(spec.ok()) << spec.error().to_string();
  const auto& pipeline = report.methods.at(0).pipeline;
  EXPECT_EQ(pipeline.executed, (std::vector<std::string>{"transform:qnn:narrow_index_inputs", "partition:qnn"}));
  const auto placements = exporter::node_placements(pipeline);
  std::map<std::string, int> reasons;
  for (const auto& node : placements) {
    if (node.backend.empty()) ++reasons[node.op + ": " + node.reason];
    if (node.id == 3) {
      EXPECT_EQ(node.reason, "skip_node_id_set") << node.op;
    }
  }
  EXPECT_EQ(reasons["index_copy: skip_node_op_set"], 4) << "two layers, k and v";
  EXPECT_EQ(reasons["linear: skip_node_id_set"], 1);
  EXPECT_EQ(reasons.count("cast: QNN HTP has no 64-bit integers: this i64 -> i32 cast runs on the CPU"), 1u);

  const auto& listing = std::get<std::vector<std::string>>(spec->metadata.at(exporter::node_placements_key("prefill")));
  EXPECT_EQ(listing.size(), placements.size());
  auto bytes = program::serialize_program(*spec);
  ASSERT_TRUE(bytes.ok());
  auto loaded = program::LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok());
  const std::string text = program::describe_program(**loaded);
  EXPECT_NE(text.find("nodes of method 'prefill'"), std::string::npos);
  EXPECT_NE(text.find("portable: skip_node_id_set"), std::string::npos);
  EXPECT_NE(text.find("qnn:0"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::qnn
