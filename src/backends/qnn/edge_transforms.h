// Graph rewrites the QNN partitioner runs before partitioning (listed as
// "transform:qnn:<name>" in the export report).
#pragma once

#include <memory>

#include "kestrel/export/partitioner.h"
#include "kestrel/export/pass_manager.h"

namespace kestrel::qnn {

// "narrow_index_inputs": QNN HTP has no 64-bit integers. Each i64 graph input (tokens,
// positions) that feeds an index input of a node QNN will take gets one `cast` to i32 (run on
// the CPU, before the delegate), and those nodes read the i32 copy; nodes the partitioner
// options keep portable go on reading the i64 input.
std::shared_ptr<exporter::Pass> make_narrow_index_inputs_pass(exporter::PartitionerOptions options);

}  // namespace kestrel::qnn
