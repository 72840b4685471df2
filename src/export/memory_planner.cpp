#include "kestrel/export/memory_planner.h"

#include <algorithm>
#include <limits>
#include <set>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

ValueId alias_root(const Graph& graph, ValueId id) {
  const size_t limit = graph.values().size();
  for (size_t step = 0; step < limit; ++step) {
    int32_t next = graph.value(id).alias_of;
    if (next < 0 || next >= static_cast<int32_t>(limit)) break;
    id = next;
  }
  return id;
}

}  // namespace

Result<std::vector<PlannedLifetime>> planned_lifetimes(const Graph& graph, uint64_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return make_error(ErrorCode::kInvalidArgument, "memory plan alignment {} is not a power of two", alignment);
  KESTREL_RETURN_IF_ERROR(graph.validate());

  const auto& nodes = graph.nodes();
  const size_t value_count = graph.values().size();
  constexpr size_t kUnset = std::numeric_limits<size_t>::max();
  std::vector<size_t> first(value_count, kUnset), last(value_count, 0);
  auto use = [&](ValueId v, size_t position) {
    ValueId root = alias_root(graph, v);
    last[root] = std::max(last[root], position);
  };
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (ValueId v : nodes[i].inputs) use(v, i);
    for (ValueId v : nodes[i].outputs) {
      first[v] = i;
      last[v] = std::max(last[v], i);
      if (graph.value(v).alias_of >= 0) use(v, i);
    }
  }
  const std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  const size_t end = nodes.empty() ? 0 : nodes.size() - 1;
  for (ValueId v : outputs)
    if (ValueId root = alias_root(graph, v); root != v) last[root] = end;

  std::vector<PlannedLifetime> lifetimes;
  for (ValueId v = 0; v < static_cast<ValueId>(value_count); ++v) {
    const Value& value = graph.value(v);
    if (first[v] == kUnset || value.alias_of >= 0 || outputs.count(v)) continue;
    auto bytes = dtype_storage_bytes(value.dtype, value.numel(), value.shape.empty() ? 1 : value.shape.back());
    if (!bytes.ok()) return bytes.error().with_context(fmt::format("planning value {} ('{}')", v, value.name));
    const uint64_t aligned = (static_cast<uint64_t>(*bytes) + alignment - 1) / alignment * alignment;
    lifetimes.push_back({v, first[v], std::max(first[v], last[v]), aligned});
  }
  return lifetimes;
}

Result<MemoryPlan> plan_memory(const Graph& graph, uint64_t alignment) {
  KESTREL_ASSIGN_OR_RETURN(std::vector<PlannedLifetime> lifetimes, planned_lifetimes(graph, alignment));
  std::vector<const PlannedLifetime*> order;
  for (const auto& lifetime : lifetimes) order.push_back(&lifetime);
  std::sort(order.begin(), order.end(), [](const PlannedLifetime* a, const PlannedLifetime* b) {
    if (a->bytes != b->bytes) return a->bytes > b->bytes;
    if (a->first != b->first) return a->first < b->first;
    return a->value < b->value;
  });

  struct Placed {
    const PlannedLifetime* lifetime;
    uint64_t offset;
  };
  std::vector<Placed> placed;
  MemoryPlan plan;
  for (const PlannedLifetime* t : order) {
    uint64_t offset = 0;
    if (t->bytes > 0) {
      std::vector<Placed> live;
      for (const Placed& p : placed)
        if (p.lifetime->bytes > 0 && p.lifetime->first <= t->last && t->first <= p.lifetime->last) live.push_back(p);
      std::sort(live.begin(), live.end(), [](const Placed& a, const Placed& b) { return a.offset < b.offset; });
      uint64_t cursor = 0;
      uint64_t best_gap = std::numeric_limits<uint64_t>::max();
      bool found = false;
      for (const Placed& p : live) {
        if (p.offset > cursor) {
          const uint64_t gap = p.offset - cursor;
          if (gap >= t->bytes && gap < best_gap) {
            best_gap = gap;
            offset = cursor;
            found = true;
          }
        }
        cursor = std::max(cursor, p.offset + p.lifetime->bytes);
      }
      if (!found) offset = cursor;
    }
    placed.push_back({t, offset});
    plan.offsets[t->value] = offset;
    plan.arena_bytes = std::max(plan.arena_bytes, offset + t->bytes);
  }
  return plan;
}

}  // namespace kestrel::exporter
