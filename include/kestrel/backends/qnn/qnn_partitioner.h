// The QNN backend at export time: its option table, op-support check, compile-spec builder and
// the payload a QNN delegate builds its graph from.
//
//   auto partitioner = kestrel::qnn::QnnPartitioner::from_options({{"soc_model", "SM8550"s}});
//   pass_manager.add_partitioner(std::make_shared<exporter::Partitioner>(std::move(*partitioner)));
//
// The CLI offers `--backend qnn` through make_qnn_backend_exporter() and prints
// `--list-options` from its options().format_table().
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/options.h"
#include "kestrel/export/partitioner.h"

namespace kestrel::qnn {

inline constexpr const char* kQnnBackendId = "qnn";

// The declared options: partitioner (skip_node_op_set, skip_node_id_set, skip_mutable_buffer)
// and compile spec (soc_model, backend, htp_performance_mode, precision, use_fp16, ...).
const exporter::OptionTable& qnn_option_table();

class QnnBackendExporter final : public exporter::BackendExporter {
 public:
  std::string id() const override { return kQnnBackendId; }
  const exporter::OptionTable& options() const override { return qnn_option_table(); }
  // Consults the op-support table (op_support.h).
  bool supports(const exporter::Graph& graph, const exporter::Node& node) const override;
  std::string unsupported_reason(const exporter::Graph& graph, const exporter::Node& node) const override;
  // narrow_index_inputs (i64 token and position inputs cast to i32 for the nodes QNN takes).
  std::vector<std::shared_ptr<exporter::Pass>> edge_transforms(
      const exporter::PartitionerOptions& options) const override;
  Result<std::map<std::string, std::vector<uint8_t>>> build_compile_specs(
      const exporter::OptionMap& compile_spec_options) const override;
  // Serializes the subgraph (payload.h) together with the compile specs, and lowers it to a QNN
  // op graph once to refuse what QNN cannot express.
  Result<std::vector<uint8_t>> preprocess(
      const exporter::Graph& subgraph,
      const std::map<std::string, std::vector<uint8_t>>& compile_specs) const override;
};

std::shared_ptr<const exporter::BackendExporter> make_qnn_backend_exporter();

class QnnPartitioner {
 public:
  // exporter::Partitioner::from_options with the QNN backend exporter: unknown names, wrong
  // types, an unknown SoC and contradicting options are errors.
  static Result<exporter::Partitioner> from_options(const exporter::OptionMap& options);
};

}  // namespace kestrel::qnn
