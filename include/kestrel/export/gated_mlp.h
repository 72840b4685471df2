// Folds a gated MLP's silu(gate) * up into one `silu_mul` node (docs/ops.md) where the CPU runs
// it: one pass over the [T, F] activations instead of two (silu's output written and read back),
// with the silu and mul kernels' own arithmetic, so every value is the same.
#pragma once

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

// Rewrites every mul (not delegated) of two same-shaped f32 values, one of them a silu's output
// read by nothing else; returns how many it rewrote. Runs after partitioning, so a backend sees
// the ops it was offered.
Result<int> fuse_silu_mul(Graph& graph);

}  // namespace kestrel::exporter
