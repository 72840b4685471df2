#include "kestrel/export/head_layout.h"

#include <set>
#include <unordered_map>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

const program::AttrValue kSwapHeadsAndTokens = std::vector<int64_t>{0, 2, 1, 3};

// A [B, T, H, Dh] <-> [B, H, T, Dh] transpose.
bool swaps_heads_and_tokens(const Node& node) {
  if (node.op != "transpose" || node.inputs.size() != 1 || node.outputs.size() != 1 || node.attrs.size() != 1)
    return false;
  const auto it = node.attrs.find("perm");
  return it != node.attrs.end() && it->second == kSwapHeadsAndTokens;
}

// Whether a node already has the default layout (attention and rope with no `layout`, or "bhtd").
bool heads_first(const Node& node) {
  const auto it = node.attrs.find("layout");
  return it == node.attrs.end() || it->second == program::AttrValue{std::string("bhtd")};
}

// Who reads each value, and which values the graph exposes or another value aliases: a value
// the rewrite changes must be read by the one node it expects and by nothing else.
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

// An attention node with what the rewrite touches: the transpose that makes q (to_heads), the
// rope between them (or none), and the transpose after attention (from_heads).
struct Match {
  Node* attention = nullptr;
  Node* rope = nullptr;
  const Node* to_heads = nullptr;
  const Node* from_heads = nullptr;
};

// The nodes after `graph.nodes()` minus `removed`, with each `replaced` node in its place.
void rebuild(Graph& graph, const std::set<NodeId>& removed, std::unordered_map<NodeId, Node>& replaced) {
  std::vector<Node> nodes;
  for (Node& node : graph.nodes()) {
    if (removed.count(node.id) != 0) continue;
    const auto it = replaced.find(node.id);
    nodes.push_back(it != replaced.end() ? std::move(it->second) : std::move(node));
  }
  graph.nodes() = std::move(nodes);
}

// A cast of f32 to f16 and nothing else.
bool narrows_to_f16(const Graph& graph, const Node& node) {
  if (node.op != "cast" || node.inputs.size() != 1 || node.outputs.size() != 1) return false;
  for (const auto& [name, value] : node.attrs)
    if (name != "dtype" || value != program::AttrValue{std::string("f16")}) return false;
  return graph.value(node.inputs[0]).dtype == DType::kF32 && graph.value(node.outputs[0]).dtype == DType::kF16;
}

// k and v on their way to an f16 cache: transpose -> (rope ->) cast becomes (rope in the
// tokens-first layout ->) a transpose that writes f16. The cast's output (k_new or v_new) keeps
// its name and readers.
Result<int> fold_cache_casts(Graph& graph) {
  const Uses uses(graph);
  std::unordered_map<NodeId, const Node*> by_id;
  for (const Node& node : graph.nodes()) by_id[node.id] = &node;
  auto producer = [&](ValueId v) -> const Node* {
    const auto it = by_id.find(graph.value(v).producer);
    return it == by_id.end() ? nullptr : it->second;
  };
  std::set<NodeId> removed;
  std::unordered_map<NodeId, Node> replaced;
  int folded = 0;
  for (const Node& cast : graph.nodes()) {
    if (!narrows_to_f16(graph, cast) || !uses.only_reader(graph, cast.inputs[0], cast.id)) continue;
    const Node* before = producer(cast.inputs[0]);
    const Node* rope = nullptr;
    if (before != nullptr && before->op == "rope" && heads_first(*before) && before->outputs.size() == 1 &&
        !before->inputs.empty() && uses.only_reader(graph, before->inputs[0], before->id)) {
      rope = before;
      before = producer(rope->inputs[0]);
    }
    if (before == nullptr || !swaps_heads_and_tokens(*before) || removed.count(before->id) != 0) continue;
    const Node& transpose = *before;
    const ValueId tokens = transpose.inputs[0], narrowed = cast.outputs[0];  // k_new or v_new
    // The transpose now writes the cast's output, in f16; with a rope, the rope takes the
    // transpose's place (reading the projection's layout) and the transpose the rope's.
    Node to_heads = transpose;
    to_heads.outputs = {narrowed};
    if (rope != nullptr) {
      Node tokens_rope = *rope;
      tokens_rope.id = transpose.id;
      tokens_rope.inputs[0] = tokens;
      tokens_rope.attrs["layout"] = std::string("bthd");
      graph.value(rope->outputs[0]).shape = graph.value(tokens).shape;
      graph.value(rope->outputs[0]).producer = transpose.id;
      to_heads.id = rope->id;
      to_heads.inputs = {rope->outputs[0]};
      replaced[transpose.id] = std::move(tokens_rope);
      replaced[rope->id] = std::move(to_heads);
    } else {
      replaced[transpose.id] = std::move(to_heads);
    }
    graph.value(narrowed).producer = rope != nullptr ? rope->id : transpose.id;
    removed.insert(cast.id);
    ++folded;
  }
  if (folded == 0) return 0;
  rebuild(graph, removed, replaced);
  KESTREL_RETURN_IF_ERROR(graph.validate());
  return folded;
}

}  // namespace

Result<int> fold_head_transposes(Graph& graph) {
  const Uses uses(graph);
  std::unordered_map<NodeId, Node*> by_id;
  for (Node& node : graph.nodes()) by_id[node.id] = &node;
  auto producer = [&](ValueId v) -> Node* {
    const auto it = by_id.find(graph.value(v).producer);
    return it == by_id.end() ? nullptr : it->second;
  };

  std::vector<Match> matches;
  for (Node& node : graph.nodes()) {
    if (node.op != "attention" || node.inputs.size() != 4 || node.outputs.size() != 1 || !heads_first(node)) continue;
    Match m{&node};
    // The output side: read only by the transpose back to [B, T, H, Dh].
    const ValueId out = node.outputs[0];
    const auto& readers = uses.consumers[static_cast<size_t>(out)];
    if (readers.size() != 1 || uses.exposed.count(out) != 0 || graph.value(out).alias_of >= 0) continue;
    m.from_heads = by_id.count(readers[0]) != 0 ? by_id.at(readers[0]) : nullptr;
    if (m.from_heads == nullptr || !swaps_heads_and_tokens(*m.from_heads)) continue;
    // The q side: a transpose, or a rope of one, each value read only by the next node.
    const ValueId q = node.inputs[0];
    if (!uses.only_reader(graph, q, node.id)) continue;
    Node* before = producer(q);
    if (before != nullptr && before->op == "rope" && heads_first(*before) && before->outputs.size() == 1) {
      if (before->inputs.empty() || !uses.only_reader(graph, before->inputs[0], before->id)) continue;
      m.rope = before;
      before = producer(before->inputs[0]);
    }
    if (before == nullptr || !swaps_heads_and_tokens(*before)) continue;
    m.to_heads = before;
    matches.push_back(m);
  }
  if (matches.empty()) return fold_cache_casts(graph);

  // Readers of a from_heads output read the attention output instead (now [B, T, H, Dh]).
  std::unordered_map<ValueId, ValueId> renamed;
  std::set<NodeId> removed;
  for (const Match& m : matches) {
    const ValueId tokens_q = m.to_heads->inputs[0];
    const std::vector<int64_t> tokens_shape = graph.value(tokens_q).shape;
    if (m.rope != nullptr) {
      m.rope->inputs[0] = tokens_q;
      m.rope->attrs["layout"] = std::string("bthd");
      graph.value(m.rope->outputs[0]).shape = tokens_shape;
    } else {
      m.attention->inputs[0] = tokens_q;
    }
    m.attention->attrs["layout"] = std::string("bthd");
    const ValueId out = m.attention->outputs[0];
    graph.value(out).shape = graph.value(m.from_heads->outputs[0]).shape;
    renamed[m.from_heads->outputs[0]] = out;
    removed.insert(m.to_heads->id);
    removed.insert(m.from_heads->id);
  }
  auto rename = [&](ValueId& v) {
    const auto it = renamed.find(v);
    if (it != renamed.end()) v = it->second;
  };
  std::vector<Node> nodes;
  for (Node& node : graph.nodes()) {
    if (removed.count(node.id) != 0) continue;
    for (ValueId& input : node.inputs) rename(input);
    nodes.push_back(std::move(node));
  }
  graph.nodes() = std::move(nodes);
  for (Value& value : graph.values()) rename(value.alias_of);
  for (ValueId& output : graph.outputs()) rename(output);
  KESTREL_RETURN_IF_ERROR(graph.validate());
  KESTREL_ASSIGN_OR_RETURN(const int casts, fold_cache_casts(graph));
  return static_cast<int>(matches.size()) + casts;
}

}  // namespace kestrel::exporter
