#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "kestrel/export/memory_planner.h"

namespace kestrel::exporter {
namespace {

// 16 f32 = 64 bytes, one alignment unit.
std::vector<int64_t> unit() { return {1, 16}; }

// Independent reference: the inclusive node-position interval each planned value is live for.
std::map<ValueId, std::pair<size_t, size_t>> reference_lifetimes(const Graph& graph) {
  auto root = [&](ValueId v) {
    while (graph.value(v).alias_of >= 0) v = graph.value(v).alias_of;
    return v;
  };
  std::set<ValueId> outputs(graph.outputs().begin(), graph.outputs().end());
  std::map<ValueId, std::pair<size_t, size_t>> live;
  const auto& nodes = graph.nodes();
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].outputs)
      if (graph.value(v).alias_of < 0 && !outputs.count(v)) live[v] = {i, i};
  for (size_t i = 0; i < nodes.size(); ++i) {
    std::vector<ValueId> touched = nodes[i].inputs;
    touched.insert(touched.end(), nodes[i].outputs.begin(), nodes[i].outputs.end());
    for (ValueId v : touched) {
      auto it = live.find(root(v));
      if (it != live.end()) it->second.second = std::max(it->second.second, i);
    }
  }
  for (ValueId v : outputs) {
    auto it = live.find(root(v));
    if (it != live.end() && root(v) != v) it->second.second = nodes.size() - 1;
  }
  return live;
}

uint64_t aligned_size(const Value& value, uint64_t alignment) {
  auto bytes = dtype_storage_bytes(value.dtype, value.numel(), value.shape.empty() ? 1 : value.shape.back());
  EXPECT_TRUE(bytes.ok());
  return (*bytes + alignment - 1) / alignment * alignment;
}

// Brute force: no two values live at the same time share a byte; everything is aligned and
// inside the arena; exactly the intermediates are planned.
void check_plan(const Graph& graph, const MemoryPlan& plan, uint64_t alignment) {
  auto live = reference_lifetimes(graph);
  ASSERT_EQ(plan.offsets.size(), live.size());
  for (const auto& [v, interval] : live) {
    ASSERT_TRUE(plan.offsets.count(v)) << "value " << v << " not planned";
    EXPECT_EQ(plan.offsets.at(v) % alignment, 0u);
    EXPECT_LE(plan.offsets.at(v) + aligned_size(graph.value(v), alignment), plan.arena_bytes);
  }
  EXPECT_EQ(plan.arena_bytes % alignment, 0u);
  for (auto a = live.begin(); a != live.end(); ++a)
    for (auto b = std::next(a); b != live.end(); ++b) {
      const bool overlap_in_time = a->second.first <= b->second.second && b->second.first <= a->second.second;
      if (!overlap_in_time) continue;
      const uint64_t a0 = plan.offsets.at(a->first), a1 = a0 + aligned_size(graph.value(a->first), alignment);
      const uint64_t b0 = plan.offsets.at(b->first), b1 = b0 + aligned_size(graph.value(b->first), alignment);
      if (a0 == a1 || b0 == b1) continue;
      EXPECT_TRUE(a1 <= b0 || b1 <= a0) << "values " << a->first << " [" << a0 << ", " << a1 << ") and " << b->first
                                        << " [" << b0 << ", " << b1 << ") overlap while both live";
    }
}

TEST(MemoryPlanner, ChainReusesMemoryAndSkipsInputsAndOutputs) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, unit(), InputKind::kUser);
  ValueId a = g.add_op("silu", {x}, "a", DType::kF32, unit());
  ValueId b = g.add_op("silu", {a}, "b", DType::kF32, unit());
  ValueId c = g.add_op("silu", {b}, "c", DType::kF32, unit());
  ValueId d = g.add_op("silu", {c}, "d", DType::kF32, unit());
  g.mark_output(d);
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(plan->offsets.size(), 3u);
  EXPECT_FALSE(plan->offsets.count(x));
  EXPECT_FALSE(plan->offsets.count(d));
  // a and c are never live together: two slots for three tensors.
  EXPECT_EQ(plan->arena_bytes, 128u);
  EXPECT_EQ(plan->offsets.at(a), plan->offsets.at(c));
  EXPECT_NE(plan->offsets.at(a), plan->offsets.at(b));
  check_plan(g, *plan, 64);
}

TEST(MemoryPlanner, SizesAreAlignedAndQ8CountsBlocks) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {3}, InputKind::kUser);
  ValueId small = g.add_op("cast", {x}, "small", DType::kF16, {3});      // 6 bytes -> 64
  ValueId q = g.add_op("quant", {small}, "q", DType::kQ8, {2, 32});      // 68 bytes -> 128
  ValueId y = g.add_op("add", {q, small}, "y", DType::kF32, {3});
  g.mark_output(y);
  auto plan = plan_memory(g, 64);
  ASSERT_TRUE(plan.ok()) << plan.error().to_string();
  EXPECT_EQ(plan->arena_bytes, 192u);
  check_plan(g, *plan, 64);
  auto tight = plan_memory(g, 2);
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ(tight->arena_bytes, 74u);
  EXPECT_FALSE(plan_memory(g, 48).ok());
  EXPECT_FALSE(plan_memory(g, 0).ok());

  Graph bad;  // q8 whose last axis is not a multiple of the block
  ValueId in = bad.add_input("in", DType::kF32, {3}, InputKind::kUser);
  ValueId mid = bad.add_op("quant", {in}, "mid", DType::kQ8, {3});
  bad.mark_output(bad.add_op("add", {mid}, "out", DType::kF32, {3}));
  auto refused = plan_memory(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("'mid'"), std::string::npos);
}

TEST(MemoryPlanner, AliasUsesExtendTheTargetsLifetime) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, unit(), InputKind::kUser);
  ValueId a = g.add_op("silu", {x}, "a", DType::kF32, unit());            // 0
  ValueId r = g.add_op("reshape", {a}, "r", DType::kF32, {16});           // 1: alias of a
  g.value(r).alias_of = a;
  ValueId b = g.add_op("silu", {x}, "b", DType::kF32, unit());            // 2
  ValueId c = g.add_op("silu", {b}, "c", DType::kF32, unit());            // 3
  ValueId d = g.add_op("add", {c, r}, "d", DType::kF32, unit());          // 4: uses a through r
  g.mark_output(d);
  auto lifetimes = planned_lifetimes(g);
  ASSERT_TRUE(lifetimes.ok());
  std::map<ValueId, PlannedLifetime> by_value;
  for (const auto& l : *lifetimes) by_value[l.value] = l;
  EXPECT_FALSE(by_value.count(r));  // aliases are not planned
  EXPECT_EQ(by_value.at(a).first, 0u);
  EXPECT_EQ(by_value.at(a).last, 4u);
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->offsets.at(a), plan->offsets.at(b));
  EXPECT_NE(plan->offsets.at(a), plan->offsets.at(c));
  check_plan(g, *plan, 64);
}

TEST(MemoryPlanner, ValueAliasedByAGraphOutputLivesToTheEnd) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, unit(), InputKind::kUser);
  ValueId a = g.add_op("silu", {x}, "a", DType::kF32, unit());    // 0
  ValueId r = g.add_op("reshape", {a}, "r", DType::kF32, {16});   // 1
  g.value(r).alias_of = a;
  ValueId b = g.add_op("silu", {x}, "b", DType::kF32, unit());    // 2
  ValueId c = g.add_op("silu", {b}, "c", DType::kF32, unit());    // 3
  g.mark_output(r);
  g.mark_output(c);
  auto lifetimes = planned_lifetimes(g);
  ASSERT_TRUE(lifetimes.ok());
  for (const auto& l : *lifetimes)
    if (l.value == a) {
      EXPECT_EQ(l.last, 3u);
    }
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  EXPECT_NE(plan->offsets.at(a), plan->offsets.at(b));
  check_plan(g, *plan, 64);
}

TEST(MemoryPlanner, AliasesOfInputsAndOutputsAreNotPlanned) {
  Graph g;
  ValueId cache = g.add_input("cache", DType::kF32, {4, 16}, InputKind::kBuffer);
  ValueId x = g.add_input("x", DType::kF32, unit(), InputKind::kUser);
  ValueId idx = g.add_input("idx", DType::kI64, {1}, InputKind::kUser);
  ValueId updated = g.add_op("index_copy", {cache, idx, x}, "updated", DType::kF32, {4, 16});
  g.value(updated).alias_of = cache;
  ValueId y = g.add_op("silu", {updated}, "y", DType::kF32, {4, 16});
  g.mark_output(y);
  auto plan = plan_memory(g);
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->offsets.empty());
  EXPECT_EQ(plan->arena_bytes, 0u);
}

TEST(MemoryPlanner, RandomGraphsNeverOverlapLiveTensors) {
  std::mt19937 rng(77);
  int reused = 0;
  for (int trial = 0; trial < 200; ++trial) {
    Graph g;
    std::vector<ValueId> pool;
    pool.push_back(g.add_input("x", DType::kF32, {1, 8}, InputKind::kUser));
    const int n = 2 + static_cast<int>(rng() % 40);
    uint64_t sum = 0;
    for (int i = 0; i < n; ++i) {
      const ValueId src = pool[pool.size() - 1 - rng() % std::min<size_t>(pool.size(), 5)];
      const bool alias = rng() % 5 == 0 && g.value(src).producer >= 0;
      if (alias) {
        ValueId r = g.add_op("reshape", {src}, fmt::format("r{}", i), g.value(src).dtype,
                             {g.value(src).numel()});
        g.value(r).alias_of = src;
        pool.push_back(r);
        continue;
      }
      std::vector<ValueId> in{src};
      if (rng() % 2) in.push_back(pool[rng() % pool.size()]);
      const DType dtype = rng() % 4 == 0 ? DType::kF16 : DType::kF32;
      const int64_t width = 1 + static_cast<int64_t>(rng() % 100);
      const int outputs = rng() % 6 == 0 ? 2 : 1;
      std::vector<std::tuple<std::string, DType, std::vector<int64_t>>> outs;
      for (int k = 0; k < outputs; ++k)
        outs.emplace_back(fmt::format("v{}_{}", i, k), dtype, std::vector<int64_t>{1, width});
      NodeId id = g.add_node("op", in, outs);
      for (ValueId v : g.find_node(id)->outputs) pool.push_back(v);
    }
    std::set<ValueId> outs{pool.back()};
    for (size_t k = 1; k < pool.size(); ++k)
      if (rng() % 8 == 0) outs.insert(pool[k]);
    for (ValueId v : outs) g.mark_output(v);
    ASSERT_TRUE(g.validate().ok()) << g.validate().error().to_string();

    const uint64_t alignment = trial % 2 ? 64 : 16;
    auto plan = plan_memory(g, alignment);
    ASSERT_TRUE(plan.ok()) << plan.error().to_string();
    check_plan(g, *plan, alignment);
    for (const auto& [v, offset] : plan->offsets) sum += aligned_size(g.value(v), alignment);
    EXPECT_LE(plan->arena_bytes, sum);
    if (plan->arena_bytes < sum) ++reused;
  }
  EXPECT_GT(reused, 100);  // most graphs share memory between tensors
}

}  // namespace
}  // namespace kestrel::exporter
