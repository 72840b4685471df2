#include "kestrel/export/gated_mlp.h"

#include <set>
#include <unordered_map>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

Result<int> fuse_silu_mul(Graph& graph) {
  const auto consumers = graph.consumers();
  std::set<ValueId> exposed(graph.outputs().begin(), graph.outputs().end());
  for (const Value& value : graph.values())
    if (value.alias_of >= 0) exposed.insert(value.alias_of);
  std::unordered_map<NodeId, const Node*> by_id;
  for (const Node& node : graph.nodes()) by_id[node.id] = &node;
  auto f32_like = [&](ValueId a, ValueId b) {
    const Value &x = graph.value(a), &y = graph.value(b);
    return x.dtype == DType::kF32 && y.dtype == DType::kF32 && x.shape == y.shape;
  };

  std::set<NodeId> removed;
  int fused = 0;
  for (Node& node : graph.nodes()) {
    if (node.op != "mul" || node.inputs.size() != 2 || node.outputs.size() != 1 || !node.attrs.empty()) continue;
    const ValueId out = node.outputs[0];
    for (int side = 0; side < 2; ++side) {
      const ValueId activated = node.inputs[side], up = node.inputs[1 - side];
      const auto it = by_id.find(graph.value(activated).producer);
      if (it == by_id.end()) continue;
      const Node& silu = *it->second;
      if (silu.op != "silu" || silu.inputs.size() != 1 || silu.outputs.size() != 1 || !silu.attrs.empty() ||
          removed.count(silu.id) != 0)
        continue;
      // silu's output goes only to this product; the three tensors have one shape.
      const auto& readers = consumers[static_cast<size_t>(activated)];
      if (readers.size() != 1 || readers[0] != node.id || exposed.count(activated) != 0 ||
          graph.value(activated).alias_of >= 0 || activated == up)
        continue;
      if (!f32_like(silu.inputs[0], activated) || !f32_like(up, activated) || !f32_like(out, activated)) continue;
      // silu(gate) * up and up * silu(gate) are the same product (IEEE multiplication commutes).
      node.op = "silu_mul";
      node.inputs = {silu.inputs[0], up};
      removed.insert(silu.id);
      ++fused;
      break;
    }
  }
  if (fused == 0) return 0;
  std::vector<Node> nodes;
  for (Node& node : graph.nodes())
    if (removed.count(node.id) == 0) nodes.push_back(std::move(node));
  graph.nodes() = std::move(nodes);
  KESTREL_RETURN_IF_ERROR(graph.validate());
  return fused;
}

}  // namespace kestrel::exporter
