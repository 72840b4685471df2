#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>

#include "export/test_backend.h"
#include "export/zero_constant.h"
#include "kestrel/export/partitioner.h"
#include "kestrel/export/pass_manager.h"

namespace kestrel::exporter {
namespace {

using testing::payload_text;
using testing::TestBackend;
using testing::zero_floats;

Partitioner make_partitioner(std::shared_ptr<const BackendExporter> backend, const OptionMap& options = {}) {
  auto partitioner = Partitioner::from_options(std::move(backend), options);
  EXPECT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  return std::move(partitioner).value();
}

// x -> linear(w) -> add(., x) -> mul(., .) -> output
struct Chain {
  Graph graph;
  ValueId x, w, a, b, c;
  Chain() {
    x = graph.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
    w = graph.add_input("w", DType::kF32, {4, 4}, InputKind::kParameter, zero_floats(16));
    a = graph.add_op("linear", {x, w}, "a", DType::kF32, {1, 4});
    b = graph.add_op("add", {a, x}, "b", DType::kF32, {1, 4});
    c = graph.add_op("mul", {b, b}, "c", DType::kF32, {1, 4});
    graph.mark_output(c);
  }
};

// a = add(x, x); s = silu(a) [unsupported]; m = mul(a, a); d = add(s, m)
struct Diamond {
  Graph graph;
  ValueId x, a, s, m, d;
  Diamond() {
    x = graph.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
    a = graph.add_op("add", {x, x}, "a", DType::kF32, {1, 4});
    s = graph.add_op("silu", {a}, "s", DType::kF32, {1, 4});
    m = graph.add_op("mul", {a, a}, "m", DType::kF32, {1, 4});
    d = graph.add_op("add", {s, m}, "d", DType::kF32, {1, 4});
    graph.mark_output(d);
  }
};

// ---- A reference interpreter over scalars: checks that partitioning preserves semantics. ----

uint64_t apply(const std::string& op, const std::vector<uint64_t>& in, size_t output) {
  uint64_t h = std::hash<std::string>{}(op) + output * 0x9e3779b97f4a7c15ull;
  for (uint64_t v : in) h = (h ^ v) * 0x100000001b3ull + 7;
  return h;
}

std::vector<uint64_t> evaluate(const Graph& graph, const std::vector<Graph>& delegate_graphs,
                               const std::vector<uint64_t>& inputs) {
  std::map<ValueId, uint64_t> env;
  for (size_t i = 0; i < graph.inputs().size(); ++i) env[graph.inputs()[i]] = inputs[i];
  for (const Node& node : graph.nodes()) {
    std::vector<uint64_t> in;
    for (ValueId v : node.inputs) in.push_back(env.at(v));
    if (node.op == "delegate") {
      auto out = evaluate(delegate_graphs.at(node.delegate), delegate_graphs, in);
      EXPECT_EQ(out.size(), node.outputs.size());
      for (size_t k = 0; k < node.outputs.size() && k < out.size(); ++k) env[node.outputs[k]] = out[k];
    } else {
      for (size_t k = 0; k < node.outputs.size(); ++k) env[node.outputs[k]] = apply(node.op, in, k);
    }
  }
  std::vector<uint64_t> out;
  for (ValueId v : graph.outputs()) out.push_back(env.at(v));
  return out;
}

std::vector<uint64_t> sample_inputs(const Graph& graph) {
  std::vector<uint64_t> in;
  for (size_t i = 0; i < graph.inputs().size(); ++i) in.push_back(1000 + i * 17);
  return in;
}

// Whether contracting each partition to one vertex leaves the node graph acyclic.
bool contraction_is_acyclic(const Graph& graph, const std::vector<std::vector<NodeId>>& partitions) {
  std::map<NodeId, int> vertex;
  int next = 0;
  for (const auto& p : partitions) {
    for (NodeId id : p) vertex[id] = next;
    ++next;
  }
  for (const Node& node : graph.nodes())
    if (!vertex.count(node.id)) vertex[node.id] = next++;
  std::map<ValueId, NodeId> producer;
  for (const Node& node : graph.nodes())
    for (ValueId v : node.outputs) producer[v] = node.id;
  std::vector<std::set<int>> edges(next);
  for (const Node& node : graph.nodes())
    for (ValueId v : node.inputs)
      if (producer.count(v)) {
        int from = vertex[producer[v]], to = vertex[node.id];
        if (from != to) edges[from].insert(to);
      }
  std::vector<int> indegree(next, 0);
  for (const auto& e : edges)
    for (int to : e) ++indegree[to];
  std::vector<int> ready;
  for (int v = 0; v < next; ++v)
    if (!indegree[v]) ready.push_back(v);
  int seen = 0;
  while (!ready.empty()) {
    int v = ready.back();
    ready.pop_back();
    ++seen;
    for (int to : edges[v])
      if (--indegree[to] == 0) ready.push_back(to);
  }
  return seen == next;
}

TEST(Partitioner, ChainBecomesOneDelegate) {
  Chain chain;
  auto backend = std::make_shared<TestBackend>();
  auto partitioner = make_partitioner(backend);
  const auto original = chain.graph;
  const size_t values_before = chain.graph.values().size();

  auto partitions = partitioner.find_partitions(chain.graph);
  ASSERT_EQ(partitions.size(), 1u);
  EXPECT_EQ(partitions[0], (std::vector<NodeId>{0, 1, 2}));

  auto report = partitioner.partition(chain.graph);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->partitions, 1);
  EXPECT_EQ(report->delegated_nodes, 3);
  EXPECT_EQ(report->portable_nodes, 0);
  EXPECT_TRUE(report->portable_ops.empty());

  ASSERT_TRUE(chain.graph.validate().ok());
  ASSERT_EQ(chain.graph.nodes().size(), 1u);
  const Node& node = chain.graph.nodes()[0];
  EXPECT_EQ(node.op, "delegate");
  EXPECT_EQ(node.delegate, 0);
  EXPECT_EQ(node.id, 3);  // a fresh id; the replaced ids are not reused
  EXPECT_EQ(node.inputs, (std::vector<ValueId>{chain.x, chain.w}));
  EXPECT_EQ(node.outputs, (std::vector<ValueId>{chain.c}));
  EXPECT_EQ(chain.graph.value(chain.c).producer, node.id);
  EXPECT_EQ(chain.graph.values().size(), values_before);
  EXPECT_EQ(chain.graph.outputs(), (std::vector<ValueId>{chain.c}));

  ASSERT_EQ(chain.graph.delegates().size(), 1u);
  const LoweredDelegate& delegate = chain.graph.delegates()[0];
  EXPECT_EQ(delegate.backend_id, "test");
  EXPECT_EQ(payload_text(delegate.payload), "ids=0,1,2;in=2;out=1");
  EXPECT_EQ(delegate.original_nodes, (std::vector<NodeId>{0, 1, 2}));
  EXPECT_EQ(delegate.compile_specs, partitioner.compile_specs());

  // The subgraph is self-contained: a user input and the parameter with its data.
  ASSERT_EQ(backend->subgraphs.size(), 1u);
  const Graph& sub = backend->subgraphs[0];
  ASSERT_TRUE(sub.validate().ok());
  ASSERT_EQ(sub.inputs().size(), 2u);
  EXPECT_EQ(sub.value(sub.inputs()[0]).name, "x");
  EXPECT_EQ(sub.value(sub.inputs()[0]).input_kind, InputKind::kUser);
  EXPECT_EQ(sub.value(sub.inputs()[1]).name, "w");
  EXPECT_EQ(sub.value(sub.inputs()[1]).input_kind, InputKind::kParameter);
  EXPECT_EQ(sub.value(sub.inputs()[1]).data, chain.graph.value(chain.w).data);
  ASSERT_EQ(sub.outputs().size(), 1u);
  EXPECT_EQ(sub.value(sub.outputs()[0]).name, "c");

  EXPECT_EQ(evaluate(chain.graph, backend->subgraphs, sample_inputs(chain.graph)),
            evaluate(original, {}, sample_inputs(original)));
}

TEST(Partitioner, DiamondWithUnsupportedMiddleSplitsToStayAcyclic) {
  Diamond diamond;
  auto backend = std::make_shared<TestBackend>();
  auto partitioner = make_partitioner(backend);
  const auto original = diamond.graph;

  // {add a, mul m, add d} as one partition would be a cycle through silu.
  EXPECT_FALSE(contraction_is_acyclic(diamond.graph, {{0, 2, 3}}));
  auto partitions = partitioner.find_partitions(diamond.graph);
  ASSERT_EQ(partitions.size(), 2u);
  EXPECT_EQ(partitions[0], (std::vector<NodeId>{0, 2}));
  EXPECT_EQ(partitions[1], (std::vector<NodeId>{3}));
  EXPECT_TRUE(contraction_is_acyclic(diamond.graph, partitions));

  auto report = partitioner.partition(diamond.graph);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->partitions, 2);
  EXPECT_EQ(report->delegated_nodes, 3);
  EXPECT_EQ(report->portable_nodes, 1);
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"silu", 1}}));
  ASSERT_TRUE(diamond.graph.validate().ok());

  const auto& nodes = diamond.graph.nodes();
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].op, "delegate");
  EXPECT_EQ(nodes[1].op, "silu");
  EXPECT_EQ(nodes[2].op, "delegate");
  // The first delegate exports a (for silu) and m (for the second delegate), by value id.
  EXPECT_EQ(nodes[0].outputs, (std::vector<ValueId>{diamond.a, diamond.m}));
  EXPECT_EQ(nodes[2].inputs, (std::vector<ValueId>{diamond.s, diamond.m}));
  EXPECT_EQ(nodes[2].outputs, (std::vector<ValueId>{diamond.d}));
  EXPECT_EQ(payload_text(diamond.graph.delegates()[0].payload), "ids=0,2;in=1;out=2");
  EXPECT_EQ(payload_text(diamond.graph.delegates()[1].payload), "ids=3;in=2;out=1");

  EXPECT_EQ(evaluate(diamond.graph, backend->subgraphs, sample_inputs(diamond.graph)),
            evaluate(original, {}, sample_inputs(original)));
}

TEST(Partitioner, SkipNodeOpSetAndSkipNodeIdSet) {
  {
    Chain chain;
    auto partitioner = make_partitioner(std::make_shared<TestBackend>(),
                                        {{"skip_node_op_set", std::set<std::string>{"mul"}}});
    EXPECT_EQ(partitioner.options().skip_node_op_set, std::set<std::string>{"mul"});
    EXPECT_EQ(partitioner.supported_nodes(chain.graph), (std::set<NodeId>{0, 1}));
    auto report = partitioner.partition(chain.graph);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->partitions, 1);
    EXPECT_EQ(report->delegated_nodes, 2);
    EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"mul", 1}}));
    ASSERT_TRUE(chain.graph.validate().ok());
    EXPECT_EQ(chain.graph.nodes()[0].op, "delegate");
    EXPECT_EQ(chain.graph.nodes()[1].op, "mul");
  }
  {
    Chain chain;  // skipping the middle node splits the chain in two
    auto partitioner = make_partitioner(std::make_shared<TestBackend>(), {{"skip_node_id_set", std::set<int64_t>{1}}});
    EXPECT_EQ(partitioner.supported_nodes(chain.graph), (std::set<NodeId>{0, 2}));
    auto partitions = partitioner.find_partitions(chain.graph);
    ASSERT_EQ(partitions.size(), 2u);
    auto report = partitioner.partition(chain.graph);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->partitions, 2);
    EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"add", 1}}));
    ASSERT_TRUE(chain.graph.validate().ok());
    std::vector<std::string> ops;
    for (const Node& node : chain.graph.nodes()) ops.push_back(node.op);
    EXPECT_EQ(ops, (std::vector<std::string>{"delegate", "add", "delegate"}));
  }
  {
    // Options parsed from the CLI form reach the partitioner.
    Chain chain;
    auto backend = std::make_shared<TestBackend>();
    auto parsed = backend->options().parse_cli({"skip_node_op_set=linear,add", "skip_node_id_set=2"});
    ASSERT_TRUE(parsed.ok());
    auto partitioner = make_partitioner(backend, *parsed);
    EXPECT_TRUE(partitioner.supported_nodes(chain.graph).empty());
    auto report = partitioner.partition(chain.graph);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->partitions, 0);
    EXPECT_EQ(report->portable_nodes, 3);
    EXPECT_TRUE(chain.graph.delegates().empty());
  }
}

TEST(Partitioner, OutputsAreOrderedByValueIdAndGraphOutputsKeepTheirOrder) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
  ValueId p = g.add_op("add", {x, x}, "p", DType::kF32, {1, 4});
  ValueId q = g.add_op("mul", {p, x}, "q", DType::kF32, {1, 4});
  ValueId r = g.add_op("add", {q, p}, "r", DType::kF32, {1, 4});
  ValueId s = g.add_op("silu", {q}, "s", DType::kF32, {1, 4});  // portable consumer of q
  g.mark_output(r);
  g.mark_output(s);
  g.mark_output(p);
  const auto original = g;
  auto backend = std::make_shared<TestBackend>();
  auto partitioner = make_partitioner(backend);
  auto report = partitioner.partition(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  ASSERT_TRUE(g.validate().ok());
  EXPECT_EQ(g.outputs(), (std::vector<ValueId>{r, s, p}));
  ASSERT_EQ(g.nodes().size(), 2u);
  const Node& delegate = g.nodes()[0];
  EXPECT_EQ(delegate.op, "delegate");
  EXPECT_EQ(delegate.outputs, (std::vector<ValueId>{p, q, r}));
  const Graph& sub = backend->subgraphs.at(0);
  ASSERT_EQ(sub.outputs().size(), 3u);
  EXPECT_EQ(sub.value(sub.outputs()[0]).name, "p");
  EXPECT_EQ(sub.value(sub.outputs()[1]).name, "q");
  EXPECT_EQ(sub.value(sub.outputs()[2]).name, "r");
  EXPECT_EQ(g.nodes()[1].op, "silu");
  EXPECT_EQ(evaluate(g, backend->subgraphs, sample_inputs(g)), evaluate(original, {}, sample_inputs(original)));
}

TEST(Partitioner, InterleavedIndependentNodesAreReorderedTopologically) {
  // add1 and add2 join one partition; the portable node between them feeds add2 and consumes
  // nothing from the partition, so the delegate must be placed after it.
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
  ValueId y = g.add_input("y", DType::kF32, {4}, InputKind::kUser);
  ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {4});
  ValueId t = g.add_op("tanh", {y}, "t", DType::kF32, {4});
  ValueId b = g.add_op("add", {a, t}, "b", DType::kF32, {4});
  ValueId u = g.add_op("tanh", {a}, "u", DType::kF32, {4});
  g.mark_output(b);
  g.mark_output(u);
  const auto original = g;
  auto backend = std::make_shared<TestBackend>();
  auto partitioner = make_partitioner(backend);
  auto partitions = partitioner.find_partitions(g);
  ASSERT_EQ(partitions.size(), 1u);
  auto report = partitioner.partition(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  ASSERT_TRUE(g.validate().ok()) << g.validate().error().to_string();
  std::vector<std::string> ops;
  for (const Node& node : g.nodes()) ops.push_back(node.op);
  EXPECT_EQ(ops, (std::vector<std::string>{"tanh", "delegate", "tanh"}));
  EXPECT_EQ(evaluate(g, backend->subgraphs, sample_inputs(g)), evaluate(original, {}, sample_inputs(original)));
}

TEST(Partitioner, SkipMutableBufferKeepsBufferWritesPortable) {
  auto build = [] {
    Graph g;
    ValueId cache = g.add_input("k_cache", DType::kF32, {8, 4}, InputKind::kBuffer);
    ValueId pos = g.add_input("pos", DType::kI64, {1}, InputKind::kUser);
    ValueId x = g.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
    ValueId h = g.add_op("add", {x, x}, "h", DType::kF32, {1, 4});
    ValueId updated = g.add_op("index_copy", {cache, pos, h}, "updated", DType::kF32, {8, 4}, {{"axis", int64_t{0}}});
    g.value(updated).alias_of = cache;
    ValueId view = g.add_op("add", {cache, cache}, "inplace", DType::kF32, {8, 4});
    g.value(view).alias_of = cache;  // an in-place update of the buffer
    ValueId m = g.add_op("mul", {updated, view}, "m", DType::kF32, {8, 4});
    g.mark_output(m);
    return g;
  };
  auto backend = std::make_shared<TestBackend>(std::set<std::string>{"add", "mul", "index_copy"});
  {
    Graph g = build();
    ASSERT_TRUE(g.validate().ok()) << g.validate().error().to_string();
    auto partitioner = make_partitioner(backend);
    EXPECT_EQ(partitioner.supported_nodes(g), (std::set<NodeId>{0, 1, 2, 3}));
  }
  {
    Graph g = build();
    auto partitioner = make_partitioner(backend, {{"skip_mutable_buffer", true}});
    EXPECT_TRUE(partitioner.options().skip_mutable_buffer);
    EXPECT_EQ(partitioner.supported_nodes(g), (std::set<NodeId>{0, 3}));
    auto report = partitioner.partition(g);
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    ASSERT_TRUE(g.validate().ok());
    EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"add", 1}, {"index_copy", 1}}));
  }
}

TEST(Partitioner, FromOptionsRoutesAndRejects) {
  auto backend = std::make_shared<TestBackend>();
  auto partitioner = Partitioner::from_options(
      backend, {{"soc_model", std::string("SM8550")}, {"skip_node_id_set", std::set<int64_t>{4, 5}}});
  ASSERT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  EXPECT_EQ(partitioner->options().skip_node_id_set, (std::set<int64_t>{4, 5}));
  const auto& specs = partitioner->compile_specs();
  // Only compile-spec options reach the compile-spec builder, defaults included.
  EXPECT_EQ(specs.size(), 3u);
  EXPECT_EQ(payload_text(specs.at("soc_model")), "SM8550");
  EXPECT_EQ(payload_text(specs.at("profile_level")), "0");
  EXPECT_EQ(payload_text(specs.at("debug")), "false");
  EXPECT_FALSE(specs.count("skip_node_id_set"));

  auto unknown = Partitioner::from_options(backend, {{"skip_node_ops", std::set<std::string>{"add"}}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("did you mean 'skip_node_op_set'?"), std::string::npos)
      << unknown.error().message();
  EXPECT_NE(unknown.error().message().find("soc_model"), std::string::npos);

  auto wrong = Partitioner::from_options(backend, {{"skip_mutable_buffer", std::string("yes")}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("'skip_mutable_buffer'"), std::string::npos);

  auto refusing = std::make_shared<TestBackend>();
  refusing->fail_compile_specs = true;
  auto refused = Partitioner::from_options(refusing, {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("compile specs refused"), std::string::npos);

  EXPECT_FALSE(Partitioner::from_options(nullptr, {}).ok());
}

TEST(Partitioner, UndeclaredPartitionerOptionIsAnInternalError) {
  auto specs = testing::test_backend_option_specs();
  specs.push_back({"skip_everything", OptionDestination::kPartitioner, OptionType::kBool, false, "?", {}});
  auto backend = std::make_shared<TestBackend>(std::set<std::string>{"add"}, specs);
  auto partitioner = Partitioner::from_options(backend, {});
  ASSERT_FALSE(partitioner.ok());
  EXPECT_EQ(partitioner.error().code(), ErrorCode::kInternal);
  EXPECT_NE(partitioner.error().message().find("'skip_everything'"), std::string::npos);

  auto typed = testing::test_backend_option_specs();
  typed[1] = {"skip_node_id_set", OptionDestination::kPartitioner, OptionType::kStringSet,
              std::set<std::string>{}, "wrong type", {}};
  auto mistyped = Partitioner::from_options(std::make_shared<TestBackend>(std::set<std::string>{"add"}, typed), {});
  ASSERT_FALSE(mistyped.ok());
  EXPECT_EQ(mistyped.error().code(), ErrorCode::kInternal);
}

TEST(Partitioner, PreprocessFailureLeavesTheGraphUnchanged) {
  Diamond diamond;
  auto backend = std::make_shared<TestBackend>();
  backend->fail_preprocess = true;
  auto partitioner = make_partitioner(backend);
  auto report = partitioner.partition(diamond.graph);
  ASSERT_FALSE(report.ok());
  EXPECT_NE(report.error().message().find("backend 'test'"), std::string::npos) << report.error().message();
  EXPECT_EQ(diamond.graph.nodes().size(), 4u);
  EXPECT_TRUE(diamond.graph.delegates().empty());
  EXPECT_TRUE(diamond.graph.validate().ok());
}

TEST(Partitioner, EdgeTransformMakesAnUnsupportedOpPartitionable) {
  auto build = [] {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
    ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {1, 4});
    ValueId b = g.add_op("fused_add", {a, x}, "b", DType::kF32, {1, 4});  // unsupported as is
    ValueId c = g.add_op("mul", {b, a}, "c", DType::kF32, {1, 4});
    g.mark_output(c);
    return g;
  };
  {
    Graph g = build();
    auto backend = std::make_shared<TestBackend>();
    auto report = make_partitioner(backend).partition(g);
    ASSERT_TRUE(report.ok());
    EXPECT_EQ(report->partitions, 2);
    EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"fused_add", 1}}));
  }
  {
    Graph g = build();
    auto backend = std::make_shared<TestBackend>();
    backend->transforms.push_back(testing::rename_op_pass("fused_add", "add"));
    auto partitioner = std::make_shared<Partitioner>(make_partitioner(backend));
    ASSERT_EQ(partitioner->edge_transforms().size(), 1u);
    PassManager manager;
    manager.add_partitioner(partitioner);
    auto pipeline = manager.run(g);
    ASSERT_TRUE(pipeline.ok()) << pipeline.error().to_string();
    ASSERT_EQ(pipeline->partitions.size(), 1u);
    EXPECT_EQ(pipeline->partitions[0].partitions, 1);
    EXPECT_EQ(pipeline->partitions[0].delegated_nodes, 3);
    EXPECT_EQ(pipeline->partitions[0].portable_nodes, 0);
    ASSERT_EQ(g.nodes().size(), 1u);
    EXPECT_EQ(g.nodes()[0].op, "delegate");
  }
}

TEST(Partitioner, SecondPartitionerLeavesDelegatesAlone) {
  Chain chain;
  auto linear_only = std::make_shared<TestBackend>(std::set<std::string>{"linear", "delegate"},
                                                   testing::test_backend_option_specs(), "first");
  auto rest = std::make_shared<TestBackend>(std::set<std::string>{"add", "mul", "delegate"},
                                            testing::test_backend_option_specs(), "second");
  ASSERT_TRUE(make_partitioner(linear_only).partition(chain.graph).ok());
  ASSERT_TRUE(make_partitioner(rest).partition(chain.graph).ok());
  ASSERT_TRUE(chain.graph.validate().ok());
  ASSERT_EQ(chain.graph.nodes().size(), 2u);
  EXPECT_EQ(chain.graph.nodes()[0].delegate, 0);
  EXPECT_EQ(chain.graph.nodes()[1].delegate, 1);
  EXPECT_EQ(chain.graph.delegates()[0].backend_id, "first");
  EXPECT_EQ(chain.graph.delegates()[1].backend_id, "second");
  EXPECT_EQ(payload_text(chain.graph.delegates()[1].payload), "ids=1,2;in=2;out=1");
}

// Random DAGs: every supported node lands in exactly one partition, contraction stays acyclic,
// no two partitions could be merged, and the partitioned graph computes the same outputs.
TEST(Partitioner, RandomGraphsStayAcyclicMaximalAndEquivalent) {
  std::mt19937 rng(1234);
  const std::vector<std::string> ops{"add", "mul", "linear", "silu", "gelu", "tanh"};
  int split = 0;  // trials with more than one partition
  for (int trial = 0; trial < 300; ++trial) {
    Graph g;
    std::vector<ValueId> pool;
    const int n_inputs = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n_inputs; ++i)
      pool.push_back(g.add_input(fmt::format("in{}", i), DType::kF32, {4}, InputKind::kUser));
    const int n_nodes = 1 + static_cast<int>(rng() % 24);
    for (int i = 0; i < n_nodes; ++i) {
      std::vector<ValueId> in;
      const int arity = 1 + static_cast<int>(rng() % 3);
      for (int k = 0; k < arity; ++k) {
        // Favor recent values so that chains and diamonds form.
        size_t span = std::min<size_t>(pool.size(), 1 + rng() % 6);
        in.push_back(pool[pool.size() - 1 - rng() % span]);
      }
      const std::string& op = ops[rng() % ops.size()];
      if (rng() % 5 == 0) {
        NodeId id = g.add_node(op, in, {{fmt::format("o{}a", i), DType::kF32, {4}},
                                        {fmt::format("o{}b", i), DType::kF32, {4}}});
        for (ValueId v : g.find_node(id)->outputs) pool.push_back(v);
      } else {
        pool.push_back(g.add_op(op, in, fmt::format("o{}", i), DType::kF32, {4}));
      }
    }
    std::set<ValueId> outs{pool.back()};
    for (ValueId v = n_inputs; v < static_cast<ValueId>(g.values().size()); ++v)
      if (rng() % 4 == 0) outs.insert(v);
    std::vector<ValueId> out_order(outs.begin(), outs.end());
    std::shuffle(out_order.begin(), out_order.end(), rng);
    for (ValueId v : out_order) g.mark_output(v);
    ASSERT_TRUE(g.validate().ok());

    auto backend = std::make_shared<TestBackend>();
    OptionMap options;
    if (trial % 3 == 0) options["skip_node_id_set"] = std::set<int64_t>{static_cast<int64_t>(rng() % n_nodes)};
    auto partitioner = make_partitioner(backend, options);
    const auto supported = partitioner.supported_nodes(g);
    const auto partitions = partitioner.find_partitions(g);
    if (partitions.size() > 1) ++split;

    std::set<NodeId> assigned;
    for (const auto& p : partitions) {
      ASSERT_FALSE(p.empty());
      for (NodeId id : p) {
        EXPECT_TRUE(supported.count(id));
        EXPECT_TRUE(assigned.insert(id).second) << "node " << id << " in two partitions";
      }
    }
    EXPECT_EQ(assigned, supported) << "trial " << trial;
    ASSERT_TRUE(contraction_is_acyclic(g, partitions)) << "trial " << trial;
    for (size_t i = 0; i < partitions.size(); ++i)
      for (size_t j = i + 1; j < partitions.size(); ++j) {
        auto merged = partitions;
        merged[i].insert(merged[i].end(), merged[j].begin(), merged[j].end());
        merged.erase(merged.begin() + static_cast<std::ptrdiff_t>(j));
        EXPECT_FALSE(contraction_is_acyclic(g, merged)) << "trial " << trial << ": partitions " << i << " and "
                                                        << j << " could merge";
      }

    const Graph original = g;
    auto report = partitioner.partition(g);
    ASSERT_TRUE(report.ok()) << report.error().to_string();
    ASSERT_TRUE(g.validate().ok()) << "trial " << trial << ": " << g.validate().error().to_string();
    EXPECT_EQ(report->partitions, static_cast<int>(partitions.size()));
    EXPECT_EQ(report->delegated_nodes, static_cast<int>(supported.size()));
    EXPECT_EQ(report->portable_nodes, static_cast<int>(original.nodes().size() - supported.size()));
    EXPECT_EQ(g.outputs(), original.outputs());
    EXPECT_EQ(g.values().size(), original.values().size());
    for (const Node& node : g.nodes()) EXPECT_FALSE(supported.count(node.id));
    EXPECT_EQ(evaluate(g, backend->subgraphs, sample_inputs(g)), evaluate(original, {}, sample_inputs(original)))
        << "trial " << trial;
  }
  EXPECT_GT(split, 60);
}

}  // namespace
}  // namespace kestrel::exporter
