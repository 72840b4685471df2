// What the exporter's rewrites after partitioning share (head_layout.cpp, gated_mlp.cpp): who
// reads each value, each node's producer by id, and the node list rebuilt without the nodes a
// rewrite folded away.
#pragma once

#include <set>
#include <unordered_map>
#include <vector>

#include "kestrel/export/graph.h"

namespace kestrel::exporter::rewrite {

// Who reads each value, and which values the graph exposes (its outputs) or another value
// aliases: a value a rewrite changes must be read by the one node it expects and nothing else.
struct Uses {
  std::vector<std::vector<NodeId>> consumers;
  std::set<ValueId> exposed;

  explicit Uses(const Graph& graph) : consumers(graph.consumers()) {
    exposed.insert(graph.outputs().begin(), graph.outputs().end());
    for (const Value& value : graph.values())
      if (value.alias_of >= 0) exposed.insert(value.alias_of);
  }
  bool only_reader(const Graph& graph, ValueId v, NodeId reader) const {
    const auto& list = consumers[static_cast<size_t>(v)];
    return list.size() == 1 && list[0] == reader && exposed.count(v) == 0 && graph.value(v).alias_of < 0;
  }
};

// The graph's nodes by id (pointers into graph.nodes(), valid until the list changes).
class Nodes {
 public:
  explicit Nodes(Graph& graph) : graph_(graph) {
    for (Node& node : graph.nodes()) by_id_[node.id] = &node;
  }
  Node* find(NodeId id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : it->second;
  }
  // The node that makes v (null for a graph input).
  Node* producer(ValueId v) const { return find(graph_.value(v).producer); }

 private:
  Graph& graph_;
  std::unordered_map<NodeId, Node*> by_id_;
};

// graph.nodes() without `removed`, each `replaced` node in its place.
inline void rebuild(Graph& graph, const std::set<NodeId>& removed, std::unordered_map<NodeId, Node> replaced = {}) {
  std::vector<Node> nodes;
  for (Node& node : graph.nodes()) {
    if (removed.count(node.id) != 0) continue;
    const auto it = replaced.find(node.id);
    nodes.push_back(it != replaced.end() ? std::move(it->second) : std::move(node));
  }
  graph.nodes() = std::move(nodes);
}

}  // namespace kestrel::exporter::rewrite
