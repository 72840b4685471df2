// Memory planning for a method's intermediates: one arena, offsets assigned by lifetime so that
// two tensors that are live at the same time never overlap.
//
// Planned: values produced by a node of the graph that are not graph outputs and not aliases.
// Graph inputs and outputs are never in the arena (the runner binds them). An alias shares the
// storage of the value it aliases, so its uses extend that value's lifetime; a value that a
// graph output aliases lives to the end of the method.
#pragma once

#include <cstdint>
#include <map>

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

struct MemoryPlan {
  std::map<ValueId, uint64_t> offsets;  // byte offset of each planned value in the arena
  uint64_t arena_bytes = 0;             // a multiple of the alignment
};

// A planned value's lifetime in node positions (indices into graph.nodes()), both inclusive,
// and its aligned size. Exposed for reports and tests.
struct PlannedLifetime {
  ValueId value = -1;
  size_t first = 0;
  size_t last = 0;
  uint64_t bytes = 0;  // aligned up to the plan's alignment
};

// Lifetimes of the values plan_memory places, in value-id order.
Result<std::vector<PlannedLifetime>> planned_lifetimes(const Graph& graph, uint64_t alignment = 64);

// Greedy by size: the largest tensors are placed first, each at the best-fitting gap between
// the tensors already placed whose lifetimes overlap its own. `alignment` must be a power of two.
Result<MemoryPlan> plan_memory(const Graph& graph, uint64_t alignment = 64);

}  // namespace kestrel::exporter
