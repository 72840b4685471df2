// Folds the transposes around attention into rope and attention (their `layout` "bthd",
// docs/ops.md): the q projection's [B, T, H, Dh] rows go through rope and attention as they
// are, and attention writes its output in the layout the o projection reads. On the way to an
// f16 cache, k's rope reads the projection's layout too, and the transpose to [B, H, T, Dh]
// writes f16 itself, taking the cast's pass. Every value the same.
#pragma once

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

// Rewrites every attention node (not delegated) whose q comes from a transpose of [B, T, H, Dh]
// to [B, H, T, Dh] (directly or through a rope read by nothing else) and whose output goes only
// to the transpose back, then every such transpose (through a rope, or not) whose f32 result
// only a cast to f16 reads; returns how many nodes it rewrote. Runs after partitioning, so a
// backend sees the ops it was offered.
Result<int> fold_head_transposes(Graph& graph);

}  // namespace kestrel::exporter
