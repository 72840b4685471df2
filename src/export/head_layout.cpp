#include "kestrel/export/head_layout.h"

#include <optional>

#include "export/graph_rewrite.h"
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

// What makes a value that a [B, H, T, Dh] op reads: a transpose from [B, T, H, Dh], directly
// or through a default-layout rope, each value read only by the next node (rope may be null).
struct HeadsChain {
  Node* rope = nullptr;
  Node* to_heads = nullptr;
};
std::optional<HeadsChain> heads_chain(const Graph& graph, const rewrite::Uses& uses, const rewrite::Nodes& nodes,
                                      ValueId v) {
  HeadsChain chain;
  Node* before = nodes.producer(v);
  if (before != nullptr && before->op == "rope" && heads_first(*before) && before->outputs.size() == 1) {
    if (before->inputs.empty() || !uses.only_reader(graph, before->inputs[0], before->id)) return std::nullopt;
    chain.rope = before;
    before = nodes.producer(before->inputs[0]);
  }
  if (before == nullptr || !swaps_heads_and_tokens(*before)) return std::nullopt;
  chain.to_heads = before;
  return chain;
}

// An attention node with what the rewrite touches: the chain that makes q, and the transpose
// after attention (from_heads).
struct Match {
  Node* attention = nullptr;
  HeadsChain q;
  const Node* from_heads = nullptr;
};

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
  const rewrite::Uses uses(graph);
  const rewrite::Nodes nodes(graph);
  std::set<NodeId> removed;
  std::unordered_map<NodeId, Node> replaced;
  int folded = 0;
  for (const Node& cast : graph.nodes()) {
    if (!narrows_to_f16(graph, cast) || !uses.only_reader(graph, cast.inputs[0], cast.id)) continue;
    const auto chain = heads_chain(graph, uses, nodes, cast.inputs[0]);
    if (!chain || removed.count(chain->to_heads->id) != 0) continue;
    const Node* rope = chain->rope;
    const Node& transpose = *chain->to_heads;
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
  rewrite::rebuild(graph, removed, std::move(replaced));
  KESTREL_RETURN_IF_ERROR(graph.validate());
  return folded;
}

}  // namespace

Result<int> fold_head_transposes(Graph& graph) {
  const rewrite::Uses uses(graph);
  const rewrite::Nodes nodes(graph);
  std::vector<Match> matches;
  for (Node& node : graph.nodes()) {
    if (node.op != "attention" || node.inputs.size() != 4 || node.outputs.size() != 1 || !heads_first(node)) continue;
    Match m;
    m.attention = &node;
    // The output side: read only by the transpose back to [B, T, H, Dh].
    const ValueId out = node.outputs[0];
    const auto& readers = uses.consumers[static_cast<size_t>(out)];
    if (readers.size() != 1 || uses.exposed.count(out) != 0 || graph.value(out).alias_of >= 0) continue;
    m.from_heads = nodes.find(readers[0]);
    if (m.from_heads == nullptr || !swaps_heads_and_tokens(*m.from_heads)) continue;
    // The q side: read only by attention, made by a transpose (through its rope).
    if (!uses.only_reader(graph, node.inputs[0], node.id)) continue;
    const auto q = heads_chain(graph, uses, nodes, node.inputs[0]);
    if (!q) continue;
    m.q = *q;
    matches.push_back(m);
  }

  // Readers of a from_heads output read the attention output instead (now [B, T, H, Dh]).
  std::unordered_map<ValueId, ValueId> renamed;
  std::set<NodeId> removed;
  for (const Match& m : matches) {
    const ValueId tokens_q = m.q.to_heads->inputs[0];
    const std::vector<int64_t> tokens_shape = graph.value(tokens_q).shape;
    if (m.q.rope != nullptr) {
      m.q.rope->inputs[0] = tokens_q;
      m.q.rope->attrs["layout"] = std::string("bthd");
      graph.value(m.q.rope->outputs[0]).shape = tokens_shape;
    } else {
      m.attention->inputs[0] = tokens_q;
    }
    m.attention->attrs["layout"] = std::string("bthd");
    const ValueId out = m.attention->outputs[0];
    graph.value(out).shape = graph.value(m.from_heads->outputs[0]).shape;
    renamed[m.from_heads->outputs[0]] = out;
    removed.insert(m.q.to_heads->id);
    removed.insert(m.from_heads->id);
  }
  if (!matches.empty()) {
    auto rename = [&](ValueId& v) {
      const auto it = renamed.find(v);
      if (it != renamed.end()) v = it->second;
    };
    for (Node& node : graph.nodes())
      for (ValueId& input : node.inputs) rename(input);
    for (Value& value : graph.values()) rename(value.alias_of);
    for (ValueId& output : graph.outputs()) rename(output);
    rewrite::rebuild(graph, removed);
    KESTREL_RETURN_IF_ERROR(graph.validate());
  }
  KESTREL_ASSIGN_OR_RETURN(const int casts, fold_cache_casts(graph));
  return static_cast<int>(matches.size()) + casts;
}

}  // namespace kestrel::exporter
