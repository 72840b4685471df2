#include "backends/qnn/edge_transforms.h"

#include <algorithm>
#include <map>
#include <vector>

#include "kestrel/backends/qnn/op_support.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

class NarrowIndexInputs final : public exporter::Pass {
 public:
  explicit NarrowIndexInputs(exporter::PartitionerOptions options) : options_(std::move(options)) {}
  std::string name() const override { return "narrow_index_inputs"; }

  Status run(exporter::Graph& graph) override {
    // (node position, input position) pairs to rewire, per i64 graph input.
    std::map<exporter::ValueId, std::vector<std::pair<size_t, size_t>>> uses;
    const auto& nodes = graph.nodes();
    for (size_t n = 0; n < nodes.size(); ++n) {
      const exporter::Node& node = nodes[n];
      if (node.op == "delegate" || !options_.skip_reason(graph, node).empty()) continue;
      if (!check_qnn_node(graph, node).ok()) continue;
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const exporter::Value& value = graph.value(node.inputs[i]);
        if (is_qnn_index_input(node.op, i) && value.dtype == DType::kI64 && value.producer < 0 &&
            value.input_kind == exporter::InputKind::kUser)
          uses[value.id].emplace_back(n, i);
      }
    }
    size_t inserted = 0;  // casts put in front so far: original node n is now at n + inserted
    for (const auto& [value_id, sites] : uses) {
      const exporter::Value input = graph.value(value_id);
      graph.add_node("cast", {value_id}, {{input.name + "_i32", DType::kI32, input.shape}},
                     {{"dtype", std::string("i32")}});
      auto& all = graph.nodes();
      // The cast reads a graph input only: first in topological order, ahead of its readers.
      std::rotate(all.begin(), all.end() - 1, all.end());
      ++inserted;
      const exporter::ValueId narrowed = all.front().outputs[0];
      for (const auto& [node_index, input_index] : sites) all[node_index + inserted].inputs[input_index] = narrowed;
    }
    return ok_status();
  }

 private:
  exporter::PartitionerOptions options_;
};

}  // namespace

std::shared_ptr<exporter::Pass> make_narrow_index_inputs_pass(exporter::PartitionerOptions options) {
  return std::make_shared<NarrowIndexInputs>(std::move(options));
}

}  // namespace kestrel::qnn
