// Capability-based partitioning.
//
// Grouping (find_partitions). Nodes are visited once, in the graph's topological order. The
// state is the contracted graph over the nodes visited so far: every partition is one vertex,
// every portable node is its own vertex. For each vertex we keep the exact set of its strict
// ancestors (a bitset over vertices), which makes "does vertex A reach vertex B" one bit test.
//
// A supported node n joins the earliest partition P for which the merge keeps the contracted
// graph acyclic, otherwise it starts a new partition. Because n comes after every visited node,
// n reaches no visited vertex, so merging n into P closes a cycle exactly when P reaches some
// other vertex X that feeds n directly (the path leaves P and re-enters it through X). The test
// is therefore: no direct feeder X != P of n has P among its ancestors. After the merge, P (and
// every vertex P reaches) gains the ancestors of n's feeders.
//
// Merging partitions afterwards never helps: partition Q was started by a node that could not
// join any earlier partition P, i.e. P already reached a feeder of that node through another
// vertex; contraction only adds paths, so that path P -> X -> Q persists and P, Q can never be
// merged. The greedy result is therefore maximal: no node can move into an earlier partition
// and no two partitions can be merged without a cycle.
#include "kestrel/export/partitioner.h"

#include <algorithm>
#include <map>
#include <queue>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

class Bitset {
 public:
  explicit Bitset(size_t bits = 0) : words_((bits + 63) / 64, 0) {}
  void set(size_t i) { words_[i / 64] |= uint64_t{1} << (i % 64); }
  bool test(size_t i) const { return (words_[i / 64] >> (i % 64)) & 1; }
  // this |= other; returns whether anything changed.
  bool merge(const Bitset& other) {
    bool changed = false;
    for (size_t w = 0; w < words_.size(); ++w) {
      uint64_t next = words_[w] | other.words_[w];
      changed |= next != words_[w];
      words_[w] = next;
    }
    return changed;
  }

 private:
  std::vector<uint64_t> words_;
};

ValueId storage_root(const Graph& graph, ValueId id) {
  const size_t limit = graph.values().size();
  for (size_t step = 0; step < limit; ++step) {
    const Value& value = graph.value(id);
    if (value.alias_of < 0 || value.alias_of >= static_cast<int32_t>(limit)) break;
    id = value.alias_of;
  }
  return id;
}

// A node that writes state the caller owns: it consumes a kBuffer value and produces an alias of
// it (an in-place update), or is an index_copy whose destination is a buffer.
bool writes_mutable_buffer(const Graph& graph, const Node& node) {
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    ValueId root = storage_root(graph, node.inputs[i]);
    if (graph.value(root).input_kind != InputKind::kBuffer) continue;
    if (node.op == "index_copy" && i == 0) return true;
    for (ValueId out : node.outputs)
      if (graph.value(out).alias_of >= 0 && storage_root(graph, out) == root) return true;
  }
  return false;
}

std::string join_ids(const std::vector<NodeId>& ids) {
  std::string out;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(ids[i]);
  }
  return out;
}

}  // namespace

Partitioner::Partitioner(std::shared_ptr<const BackendExporter> backend, PartitionerOptions options,
                         std::map<std::string, std::vector<uint8_t>> compile_specs)
    : backend_(std::move(backend)), options_(std::move(options)), compile_specs_(std::move(compile_specs)) {}

Result<Partitioner> Partitioner::from_options(std::shared_ptr<const BackendExporter> backend,
                                              const OptionMap& options) {
  if (!backend) return make_error(ErrorCode::kInvalidArgument, "partitioner needs a backend");
  const OptionTable& table = backend->options();
  KESTREL_ASSIGN_OR_RETURN(OptionMap resolved, table.resolve(options));

  PartitionerOptions partitioner_options;
  for (const auto& [name, value] : table.for_destination(resolved, OptionDestination::kPartitioner)) {
    auto wrong_type = [&, &name = name](const char* expected) {
      return make_error(ErrorCode::kInternal,
                        "backend '{}' declares partitioner option '{}' with a type the partitioner "
                        "cannot use (it needs {})",
                        backend->id(), name, expected);
    };
    if (name == "skip_node_op_set") {
      const auto* set = std::get_if<std::set<std::string>>(&value);
      if (!set) return wrong_type("a string set");
      partitioner_options.skip_node_op_set = *set;
    } else if (name == "skip_node_id_set") {
      const auto* set = std::get_if<std::set<int64_t>>(&value);
      if (!set) return wrong_type("an int set");
      partitioner_options.skip_node_id_set = *set;
    } else if (name == "skip_mutable_buffer") {
      const auto* flag = std::get_if<bool>(&value);
      if (!flag) return wrong_type("a bool");
      partitioner_options.skip_mutable_buffer = *flag;
    } else {
      return make_error(ErrorCode::kInternal,
                        "backend '{}' declares partitioner option '{}', which the partitioner does not "
                        "understand (known: skip_mutable_buffer, skip_node_id_set, skip_node_op_set)",
                        backend->id(), name);
    }
  }

  auto specs = backend->build_compile_specs(table.for_destination(resolved, OptionDestination::kCompileSpec));
  if (!specs.ok())
    return specs.error().with_context(fmt::format("building compile specs for backend '{}'", backend->id()));
  return Partitioner(std::move(backend), std::move(partitioner_options), std::move(specs).value());
}

std::string PartitionerOptions::skip_reason(const Graph& graph, const Node& node) const {
  if (skip_node_op_set.count(node.op)) return "skip_node_op_set";
  if (skip_node_id_set.count(node.id)) return "skip_node_id_set";
  if (skip_mutable_buffer && writes_mutable_buffer(graph, node)) return "skip_mutable_buffer";
  return {};
}

std::set<NodeId> Partitioner::supported_nodes(const Graph& graph) const {
  std::set<NodeId> supported;
  for (const Node& node : graph.nodes()) {
    if (node.op == "delegate") continue;  // already lowered by an earlier partitioner
    if (!options_.skip_reason(graph, node).empty()) continue;
    if (backend_->supports(graph, node)) supported.insert(node.id);
  }
  return supported;
}

std::vector<std::vector<NodeId>> Partitioner::find_partitions(const Graph& graph) const {
  const auto& nodes = graph.nodes();
  const std::set<NodeId> supported = supported_nodes(graph);
  const size_t n = nodes.size();

  std::vector<int32_t> producer_index(graph.values().size(), -1);
  for (size_t i = 0; i < n; ++i)
    for (ValueId out : nodes[i].outputs)
      if (out >= 0 && out < static_cast<ValueId>(producer_index.size())) producer_index[out] = static_cast<int32_t>(i);

  std::vector<Bitset> ancestors;        // per vertex: strict ancestors in the contracted graph
  std::vector<int32_t> vertex_of(n, -1);
  std::vector<int32_t> partition_vertex;  // partition index -> vertex
  std::vector<std::vector<NodeId>> partitions;

  for (size_t i = 0; i < n; ++i) {
    const Node& node = nodes[i];
    std::vector<int32_t> feeders;
    for (ValueId in : node.inputs) {
      if (in < 0 || in >= static_cast<ValueId>(producer_index.size())) continue;
      int32_t p = producer_index[in];
      if (p < 0 || static_cast<size_t>(p) >= i) continue;  // graph input (or invalid order)
      int32_t v = vertex_of[p];
      if (std::find(feeders.begin(), feeders.end(), v) == feeders.end()) feeders.push_back(v);
    }
    // Everything that reaches the node through a feeder other than `exclude`.
    auto upstream = [&](int32_t exclude) {
      Bitset bits(n);
      for (int32_t x : feeders) {
        if (x == exclude) continue;
        bits.set(x);
        bits.merge(ancestors[x]);
      }
      return bits;
    };

    if (supported.count(node.id)) {
      int32_t chosen = -1;
      for (size_t p = 0; p < partitions.size() && chosen < 0; ++p) {
        const int32_t vp = partition_vertex[p];
        bool acyclic = true;
        for (int32_t x : feeders)
          if (x != vp && ancestors[x].test(vp)) acyclic = false;
        if (acyclic) chosen = static_cast<int32_t>(p);
      }
      if (chosen >= 0) {
        const int32_t vp = partition_vertex[chosen];
        Bitset added = upstream(vp);
        if (ancestors[vp].merge(added)) {
          for (size_t y = 0; y < ancestors.size(); ++y)
            if (ancestors[y].test(vp)) ancestors[y].merge(added);
        }
        vertex_of[i] = vp;
        partitions[chosen].push_back(node.id);
        continue;
      }
      partition_vertex.push_back(static_cast<int32_t>(ancestors.size()));
      partitions.push_back({node.id});
    }
    vertex_of[i] = static_cast<int32_t>(ancestors.size());
    ancestors.push_back(upstream(-1));
  }
  return partitions;
}

Result<PartitionReport> Partitioner::partition(Graph& graph) const {
  KESTREL_RETURN_IF_ERROR(graph.validate());
  const std::vector<std::vector<NodeId>> partitions = find_partitions(graph);
  const auto& nodes = graph.nodes();
  const auto consumers = graph.consumers();
  const std::set<ValueId> graph_outputs(graph.outputs().begin(), graph.outputs().end());

  std::map<NodeId, size_t> node_index;
  for (size_t i = 0; i < nodes.size(); ++i) node_index[nodes[i].id] = i;
  std::map<NodeId, int32_t> partition_of;
  for (size_t p = 0; p < partitions.size(); ++p)
    for (NodeId id : partitions[p]) partition_of[id] = static_cast<int32_t>(p);
  std::vector<NodeDecision> decisions;
  for (const Node& node : nodes) {
    NodeDecision decision;
    decision.id = node.id;
    decision.op = node.op;
    if (!node.outputs.empty()) decision.output = graph.value(node.outputs[0]).name;
    if (auto it = partition_of.find(node.id); it != partition_of.end()) {
      decision.partition = it->second;
    } else if (node.op == "delegate") {
      decision.reason = "already delegated";
    } else {
      decision.reason = options_.skip_reason(graph, node);
      if (decision.reason.empty()) decision.reason = backend_->unsupported_reason(graph, node);
    }
    decisions.push_back(std::move(decision));
  }

  // Values that some value produced outside a partition aliases (kept as outputs so the alias
  // target survives).
  std::vector<std::vector<ValueId>> aliased_by(graph.values().size());
  for (const Value& value : graph.values())
    if (value.alias_of >= 0 && value.producer >= 0) aliased_by[value.alias_of].push_back(value.id);

  struct Lowered {
    std::vector<ValueId> inputs, outputs;
    LoweredDelegate delegate;
  };
  std::vector<Lowered> lowered;
  // Build and lower every subgraph before touching the graph, so an error leaves it unchanged.
  for (size_t p = 0; p < partitions.size(); ++p) {
    const auto& members = partitions[p];
    auto inside_node = [&](NodeId id) {
      auto it = partition_of.find(id);
      return it != partition_of.end() && it->second == static_cast<int32_t>(p);
    };
    std::set<ValueId> produced, external, outputs;
    for (NodeId id : members)
      for (ValueId out : nodes[node_index[id]].outputs) produced.insert(out);
    for (NodeId id : members)
      for (ValueId in : nodes[node_index[id]].inputs)
        if (!produced.count(in)) external.insert(in);
    for (ValueId v : produced) {
      bool escapes = graph_outputs.count(v) > 0;
      for (NodeId c : consumers[v]) escapes |= !inside_node(c);
      for (ValueId a : aliased_by[v]) escapes |= !inside_node(graph.value(a).producer);
      if (escapes) outputs.insert(v);
    }

    Graph sub;
    std::map<ValueId, ValueId> to_sub;
    for (ValueId v : external) {
      const Value& value = graph.value(v);
      const bool keeps_kind =
          value.input_kind == InputKind::kParameter || value.input_kind == InputKind::kConstant;
      to_sub[v] = sub.add_input(value.name, value.dtype, value.shape, keeps_kind ? value.input_kind : InputKind::kUser,
                                keeps_kind ? value.data : nullptr);
    }
    NodeId max_id = -1;
    for (NodeId id : members) {
      const Node& node = nodes[node_index[id]];
      std::vector<ValueId> inputs;
      for (ValueId in : node.inputs) inputs.push_back(to_sub.at(in));
      std::vector<std::tuple<std::string, DType, std::vector<int64_t>>> outs;
      for (ValueId out : node.outputs) {
        const Value& value = graph.value(out);
        outs.emplace_back(value.name, value.dtype, value.shape);
      }
      sub.add_node(node.op, std::move(inputs), std::move(outs), node.attrs);
      Node& copy = sub.nodes().back();
      copy.id = node.id;  // the subgraph keeps the original node ids
      for (size_t k = 0; k < node.outputs.size(); ++k) {
        const ValueId out = node.outputs[k];
        to_sub[out] = copy.outputs[k];
        Value& value = sub.value(copy.outputs[k]);
        value.producer = node.id;
        const int32_t target = graph.value(out).alias_of;
        auto mapped = to_sub.find(target);
        value.alias_of = target >= 0 && mapped != to_sub.end() ? mapped->second : -1;
      }
      max_id = std::max(max_id, node.id);
    }
    sub.reserve_node_ids(max_id + 1);
    for (ValueId v : outputs) sub.mark_output(to_sub.at(v));
    if (auto status = sub.validate(); !status.ok())
      return status.error().with_context(fmt::format("partition {} (nodes {}) built an invalid subgraph", p,
                                                     join_ids(members)));

    auto payload = backend_->preprocess(sub, compile_specs_);
    if (!payload.ok())
      return payload.error().with_context(fmt::format("backend '{}' failed to lower partition {} (nodes {})",
                                                      backend_->id(), p, join_ids(members)));
    Lowered entry;
    entry.inputs.assign(external.begin(), external.end());
    entry.outputs.assign(outputs.begin(), outputs.end());
    entry.delegate.backend_id = backend_->id();
    entry.delegate.payload = std::move(payload).value();
    entry.delegate.compile_specs = compile_specs_;
    entry.delegate.original_nodes = members;
    lowered.push_back(std::move(entry));
  }

  // Commit: the delegate nodes replace their partitions; values keep their ids.
  std::vector<Node> items;          // the new node list before ordering
  std::vector<size_t> item_key;     // position in the old order (first node for a partition)
  std::vector<int32_t> delegate_item(partitions.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto it = partition_of.find(nodes[i].id);
    if (it == partition_of.end()) {
      items.push_back(nodes[i]);
      item_key.push_back(i);
    } else if (delegate_item[it->second] < 0) {
      delegate_item[it->second] = static_cast<int32_t>(items.size());
      items.emplace_back();
      item_key.push_back(i);
    }
  }
  const int32_t first_delegate = static_cast<int32_t>(graph.delegates().size());
  for (size_t p = 0; p < partitions.size(); ++p) {
    Node& node = items[delegate_item[p]];
    node.id = graph.allocate_node_id();
    node.op = "delegate";
    node.inputs = lowered[p].inputs;
    node.outputs = lowered[p].outputs;
    node.delegate = first_delegate + static_cast<int32_t>(p);
    const std::set<ValueId> kept(node.outputs.begin(), node.outputs.end());
    for (NodeId id : partitions[p])
      for (ValueId v : nodes[node_index[id]].outputs) {
        Value& value = graph.value(v);
        if (kept.count(v)) {
          value.producer = node.id;
          value.alias_of = -1;  // a delegate materializes its outputs
        } else {
          value.producer = -1;  // internal to the delegate: no longer part of the graph
        }
      }
  }

  // Stable topological order: among the ready nodes, the one earliest in the old order first.
  std::vector<int32_t> producer_item(graph.values().size(), -1);
  for (size_t k = 0; k < items.size(); ++k)
    for (ValueId v : items[k].outputs) producer_item[v] = static_cast<int32_t>(k);
  std::vector<std::vector<int32_t>> dependents(items.size());
  std::vector<int32_t> pending(items.size(), 0);
  for (size_t k = 0; k < items.size(); ++k) {
    std::set<int32_t> deps;
    for (ValueId v : items[k].inputs)
      if (producer_item[v] >= 0 && producer_item[v] != static_cast<int32_t>(k)) deps.insert(producer_item[v]);
    pending[k] = static_cast<int32_t>(deps.size());
    for (int32_t d : deps) dependents[d].push_back(static_cast<int32_t>(k));
  }
  using Entry = std::pair<size_t, int32_t>;  // (old position, item)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> ready;
  for (size_t k = 0; k < items.size(); ++k)
    if (pending[k] == 0) ready.emplace(item_key[k], static_cast<int32_t>(k));
  std::vector<Node> ordered;
  ordered.reserve(items.size());
  while (!ready.empty()) {
    int32_t k = ready.top().second;
    ready.pop();
    ordered.push_back(std::move(items[k]));
    for (int32_t d : dependents[k])
      if (--pending[d] == 0) ready.emplace(item_key[d], d);
  }
  if (ordered.size() != items.size())
    return make_error(ErrorCode::kInternal, "partitioning for backend '{}' produced a cyclic graph",
                      backend_->id());

  graph.nodes() = std::move(ordered);
  for (auto& entry : lowered) graph.delegates().push_back(std::move(entry.delegate));
  if (auto status = graph.validate(); !status.ok())
    return status.error().with_context(
        fmt::format("graph after partitioning for backend '{}' is invalid", backend_->id()));

  PartitionReport report;
  report.backend = backend_->id();
  report.nodes = std::move(decisions);
  report.partitions = static_cast<int>(partitions.size());
  for (const auto& members : partitions) report.delegated_nodes += static_cast<int>(members.size());
  for (const Node& node : graph.nodes()) {
    if (node.op == "delegate") continue;
    ++report.portable_nodes;
    ++report.portable_ops[node.op];
  }
  return report;
}

}  // namespace kestrel::exporter
