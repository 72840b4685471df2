#include "kestrel/backends/qnn/qnn_partitioner.h"

#include <fmt/format.h>

#include <deque>

#include "backends/qnn/edge_transforms.h"
#include "backends/qnn/lowering/lowering.h"
#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/op_support.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/backends/qnn/soc.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

using exporter::OptionDestination;
using exporter::OptionSpec;
using exporter::OptionType;
using exporter::OptionValue;

OptionSpec partitioner_option(std::string name, OptionType type, OptionValue value, std::string help) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.destination = OptionDestination::kPartitioner;
  spec.type = type;
  spec.default_value = std::move(value);
  spec.help = std::move(help);
  return spec;
}

OptionSpec spec_bool(std::string name, bool value, std::string help) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.destination = OptionDestination::kCompileSpec;
  spec.type = OptionType::kBool;
  spec.default_value = value;
  spec.help = std::move(help);
  return spec;
}

OptionSpec spec_string(std::string name, std::string value, std::vector<std::string> choices, std::string help) {
  OptionSpec spec;
  spec.name = std::move(name);
  spec.destination = OptionDestination::kCompileSpec;
  spec.type = OptionType::kString;
  spec.default_value = std::move(value);
  spec.choices = std::move(choices);
  spec.help = std::move(help);
  return spec;
}

std::vector<OptionSpec> make_specs() {
  std::vector<OptionSpec> specs;
  specs.push_back(partitioner_option("skip_node_op_set", OptionType::kStringSet, std::set<std::string>{},
                                     "ops never delegated to QNN (e.g. index_copy keeps cache updates on the CPU)"));
  specs.push_back(partitioner_option("skip_node_id_set", OptionType::kIntSet, std::set<int64_t>{},
                                     "node ids never delegated to QNN"));
  specs.push_back(partitioner_option("skip_mutable_buffer", OptionType::kBool, false,
                                     "keep nodes that write buffer state (KV caches) portable"));

  specs.push_back(spec_string("soc_model", "SM8650", qnn_soc_names(),
                              "target SoC; sets the HTP architecture and VTCM size (unknown SoC is an error)"));
  specs.push_back(spec_string("backend", "htp", {"htp"}, "QNN backend the delegate runs on"));
  std::vector<std::string> modes(std::begin(kHtpPerformanceModes), std::end(kHtpPerformanceModes));
  specs.push_back(spec_string("htp_performance_mode", "burst", modes, "HTP power/performance vote while executing"));
  specs.push_back(spec_string("precision", "auto", {"auto", "fp16", "quantized"},
                              "HTP precision; auto follows use_fp16 (quantized needs encodings Kestrel lacks: error)"));
  specs.push_back(spec_bool("use_fp16", true, "run float graphs in fp16 (false asks for quantized precision)"));
  specs.push_back(spec_bool("shared_buffer", false, "zero-copy I/O through rpcmem shared buffers"));
  specs.push_back(spec_bool("online_prepare", false, "prepare the QNN graph on the device at load time"));
  specs.push_back(spec_bool("use_multi_contexts", false, "split the model over several QNN contexts"));
  specs.push_back(spec_bool("use_weight_sharing", false, "share weights between graphs of one context (HTP v73+)"));
  specs.push_back(spec_bool("use_dlbc", false, "deep-learning bandwidth compression of weights"));
  specs.push_back(spec_bool("use_slc_allocator", false, "let the HTP allocate from the system-level cache"));
  OptionSpec profile;
  profile.name = "profile_level";
  profile.destination = OptionDestination::kCompileSpec;
  profile.type = OptionType::kInt;
  profile.default_value = int64_t{0};
  profile.help = "QNN profiling: 0 off, 1 basic, 2 detailed, 3 optrace";
  profile.min = 0;
  profile.max = 3;
  specs.push_back(std::move(profile));
  specs.push_back(spec_bool("debug", false, "verbose QNN logging"));
  specs.push_back(spec_bool("saver", false, "record QNN API calls with the saver backend instead of running"));
  specs.push_back(spec_bool("dump_intermediate_outputs", false, "dump every intermediate tensor (debugging)"));
  specs.push_back(spec_bool("is_from_context_binary", false, "the delegate is a prebuilt QNN context binary"));
  specs.push_back(spec_bool("use_mha2sha", false, "rewrite multi-head attention into single-head attentions"));
  specs.push_back(spec_bool("embed_parameters", false,
                            "copy weights into each delegate payload (default: payloads reference the program's "
                            "shared constants, one copy for every method)"));
  return specs;
}

}  // namespace

const exporter::OptionTable& qnn_option_table() {
  static const exporter::OptionTable table(kQnnBackendId, make_specs());
  return table;
}

bool QnnBackendExporter::supports(const exporter::Graph& graph, const exporter::Node& node) const {
  return check_qnn_node(graph, node).ok();
}

std::string QnnBackendExporter::unsupported_reason(const exporter::Graph& graph, const exporter::Node& node) const {
  Status status = check_qnn_node(graph, node);
  if (status.ok()) return {};
  // "qnn: node 12 (linear) stays portable: <why>" -> "<why>"
  const std::string& message = status.error().message();
  const size_t cut = message.find("stays portable: ");
  return cut == std::string::npos ? message : message.substr(cut + 16);
}

std::vector<std::shared_ptr<exporter::Pass>> QnnBackendExporter::edge_transforms(
    const exporter::PartitionerOptions& options) const {
  return {make_narrow_index_inputs_pass(options)};
}

Result<std::map<std::string, std::vector<uint8_t>>> QnnBackendExporter::build_compile_specs(
    const exporter::OptionMap& compile_spec_options) const {
  KESTREL_ASSIGN_OR_RETURN(QnnCompileSpecBuilder builder, QnnCompileSpecBuilder::from_options(compile_spec_options));
  return builder.build();
}

Result<std::vector<uint8_t>> QnnBackendExporter::preprocess(
    const exporter::Graph& subgraph, const std::map<std::string, std::vector<uint8_t>>& compile_specs) const {
  // The specs must be ours (and valid) before they are baked into the payload.
  auto parsed = parse_qnn_compile_specs(compile_specs);
  if (!parsed.ok()) return parsed.error().with_context("qnn preprocess");
  if (parsed->is_from_context_binary)
    return make_error(ErrorCode::kUnsupported,
                      "qnn preprocess: is_from_context_binary: Kestrel writes op-graph payloads, not QNN context "
                      "binaries");
  for (const auto& node : subgraph.nodes()) {
    Status supported = check_qnn_node(subgraph, node);
    if (!supported.ok()) return supported.error().with_context("qnn preprocess");
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, serialize_qnn_payload(subgraph, compile_specs));
  // Lower it once here, so anything QNN cannot express fails the export rather than the load.
  auto payload = parse_qnn_payload(bytes);
  if (!payload.ok()) return payload.error().with_context("qnn preprocess");
  std::deque<std::vector<uint8_t>> produced;  // weights produced for this check (export streams them later)
  auto subgraph_bytes = [&](const QnnPayloadValue& value) -> Result<std::span<const uint8_t>> {
    if (value.embedded) return payload->data_of(value);
    const exporter::Value& v = subgraph.value(value.id);
    if (!v.data) return make_error(ErrorCode::kInvalidArgument, "qnn preprocess: '{}' has no data", v.name);
    if (v.data->is_held()) return v.data->held_bytes();
    KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, v.data->read_all());
    return std::span<const uint8_t>(produced.emplace_back(std::move(bytes)));
  };
  auto plan = lower_to_qnn(*payload, subgraph_bytes);
  if (!plan.ok()) return plan.error().with_context("qnn preprocess");
  return bytes;
}

std::shared_ptr<const exporter::BackendExporter> make_qnn_backend_exporter() {
  return std::make_shared<const QnnBackendExporter>();
}

Result<exporter::Partitioner> QnnPartitioner::from_options(const exporter::OptionMap& options) {
  return exporter::Partitioner::from_options(make_qnn_backend_exporter(), options);
}

}  // namespace kestrel::qnn
