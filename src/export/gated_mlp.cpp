#include "kestrel/export/gated_mlp.h"

#include "export/graph_rewrite.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

Result<int> fuse_silu_mul(Graph& graph) {
  const rewrite::Uses uses(graph);
  const rewrite::Nodes nodes(graph);
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
      const Node* made_by = nodes.producer(activated);
      if (made_by == nullptr) continue;
      const Node& silu = *made_by;
      if (silu.op != "silu" || silu.inputs.size() != 1 || silu.outputs.size() != 1 || !silu.attrs.empty() ||
          removed.count(silu.id) != 0)
        continue;
      // silu's output goes only to this product; the three tensors have one shape.
      if (!uses.only_reader(graph, activated, node.id) || activated == up) continue;
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
  rewrite::rebuild(graph, removed);
  KESTREL_RETURN_IF_ERROR(graph.validate());
  return fused;
}

}  // namespace kestrel::exporter
