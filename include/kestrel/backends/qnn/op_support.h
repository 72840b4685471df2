// Which ops of docs/ops.md (and which dtypes) the QNN HTP lowering accepts. Everything else
// stays on the portable kernels. The table is the documentation: docs/backends/qnn.md lists it.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"

namespace kestrel::qnn {

struct QnnOpRule {
  std::string_view op;        // Kestrel op name
  std::string_view qnn_ops;   // the QNN ops the delegate builds it from
  std::string_view dtypes;    // accepted dtypes, human readable
  std::string_view notes;     // what stays portable and why
};

// One entry per supported op; an op absent from it is never delegated.
std::span<const QnnOpRule> qnn_op_table();
const QnnOpRule* find_qnn_op_rule(std::string_view op);

// Ok when the node can run on QNN HTP; otherwise an error (kUnsupported) saying why, naming
// the node and the offending input or attribute. An i64 index input counts as supported: the
// narrow_index_inputs edge transform casts it to i32 before partitioning (the lowering itself
// takes i32 only).
Status check_qnn_node(const exporter::Graph& graph, const exporter::Node& node);
// Whether input `input` of a Kestrel op is an integer index (ids, positions, index).
bool is_qnn_index_input(const std::string& op, size_t input);

// Largest tensor rank the HTP lowering accepts.
inline constexpr int kQnnMaxRank = 5;

}  // namespace kestrel::qnn
