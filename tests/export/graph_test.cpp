#include <gtest/gtest.h>

#include "export/zero_constant.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {
namespace {

using testing::zero_floats;

TEST(Graph, BuildsChainAndValidates) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
  ValueId w = g.add_input("w", DType::kF32, {4, 4}, InputKind::kParameter, zero_floats(16));
  ValueId y = g.add_op("linear", {x, w}, "y", DType::kF32, {1, 4});
  ValueId z = g.add_op("add", {y, x}, "z", DType::kF32, {1, 4});
  g.mark_output(z);
  ASSERT_TRUE(g.validate().ok()) << g.validate().error().to_string();
  EXPECT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.value(y).producer, g.nodes()[0].id);
  EXPECT_EQ(g.value(z).producer, g.nodes()[1].id);
  EXPECT_EQ(g.value(x).producer, -1);
  EXPECT_EQ(g.value(w).numel(), 16);
  EXPECT_EQ(g.inputs(), (std::vector<ValueId>{x, w}));
  EXPECT_EQ(g.find_node(g.nodes()[1].id)->op, "add");
  EXPECT_EQ(g.find_node(1000), nullptr);
  EXPECT_EQ(g.next_node_id(), 2);

  auto consumers = g.consumers();
  ASSERT_EQ(consumers.size(), g.values().size());
  EXPECT_EQ(consumers[x], (std::vector<NodeId>{0, 1}));
  EXPECT_EQ(consumers[y], (std::vector<NodeId>{1}));
  EXPECT_TRUE(consumers[z].empty());
}

TEST(Graph, MultiOutputNodeAndScalarNumel) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {}, InputKind::kUser);
  NodeId n = g.add_node("split", {x}, {{"a", DType::kF32, {2, 3}}, {"b", DType::kI64, {5}}});
  const Node* node = g.find_node(n);
  ASSERT_NE(node, nullptr);
  ASSERT_EQ(node->outputs.size(), 2u);
  EXPECT_EQ(g.value(node->outputs[0]).numel(), 6);
  EXPECT_EQ(g.value(node->outputs[1]).dtype, DType::kI64);
  EXPECT_EQ(g.value(x).numel(), 1);
  g.mark_output(node->outputs[1]);
  EXPECT_TRUE(g.validate().ok());
}

TEST(Graph, ConstantDataOwnedKeepsBytes) {
  auto data = ConstantData::owned({1, 2, 3});
  ASSERT_TRUE(data->is_held());
  ASSERT_EQ(data->size(), 3u);
  ASSERT_EQ(data->held_bytes().size(), 3u);
  EXPECT_EQ(data->held_bytes()[2], 3);
  auto copy = data;
  data.reset();
  EXPECT_EQ(copy->held_bytes()[0], 1);
}

TEST(Graph, RejectsInputThatIsNotYetProduced) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
  ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {4});
  g.add_op("mul", {a, a}, "b", DType::kF32, {4});
  std::swap(g.nodes()[0], g.nodes()[1]);  // consumer before producer
  auto status = g.validate();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("node 1 (mul)"), std::string::npos) << status.error().message();
  EXPECT_NE(status.error().message().find("earlier node"), std::string::npos);
}

TEST(Graph, RejectsMissingValueDuplicateIdsAndBadOutputs) {
  {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    g.add_op("add", {x, x}, "a", DType::kF32, {4});
    g.nodes()[0].inputs[1] = 99;
    auto status = g.validate();
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message().find("does not exist"), std::string::npos);
  }
  {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {4});
    g.add_op("mul", {a, x}, "b", DType::kF32, {4});
    g.nodes()[1].id = g.nodes()[0].id;
    g.value(g.nodes()[1].outputs[0]).producer = g.nodes()[0].id;
    auto status = g.validate();
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message().find("used twice"), std::string::npos);
  }
  {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    g.add_op("add", {x, x}, "a", DType::kF32, {4});
    g.mark_output(42);
    EXPECT_FALSE(g.validate().ok());
  }
  {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {4});
    g.mark_output(a);
    g.mark_output(a);
    EXPECT_FALSE(g.validate().ok());
  }
  {
    Graph g;  // an input that records a producer
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    g.value(x).producer = 3;
    EXPECT_FALSE(g.validate().ok());
  }
  {
    Graph g;  // node ids must come from allocate_node_id
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    g.add_op("add", {x, x}, "a", DType::kF32, {4});
    g.nodes()[0].id = 7;
    g.value(g.nodes()[0].outputs[0]).producer = 7;
    EXPECT_FALSE(g.validate().ok());
    g.reserve_node_ids(8);
    EXPECT_TRUE(g.validate().ok());
    EXPECT_EQ(g.allocate_node_id(), 8);
  }
}

TEST(Graph, RejectsDataOfTheWrongSizeAndBadDelegate) {
  {
    Graph g;
    g.add_input("w", DType::kF32, {4, 4}, InputKind::kParameter, zero_floats(15));
    auto status = g.validate();
    ASSERT_FALSE(status.ok());
    EXPECT_NE(status.error().message().find("'w'"), std::string::npos);
  }
  {
    Graph g;
    ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
    NodeId d = g.add_node("delegate", {x}, {{"y", DType::kF32, {4}}});
    EXPECT_FALSE(g.validate().ok());  // delegate index -1
    g.delegates().push_back({});
    for (Node& node : g.nodes())
      if (node.id == d) node.delegate = 0;
    EXPECT_TRUE(g.validate().ok());
  }
}

TEST(Graph, AliasMustReferToAnEarlierValue) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {2, 2}, InputKind::kUser);
  ValueId r = g.add_op("reshape", {x}, "r", DType::kF32, {4}, {{"shape", std::vector<int64_t>{4}}});
  g.value(r).alias_of = x;
  EXPECT_TRUE(g.validate().ok());
  ValueId s = g.add_op("add", {r, r}, "s", DType::kF32, {4});
  g.value(r).alias_of = s;  // aliases a later value
  EXPECT_FALSE(g.validate().ok());
}

}  // namespace
}  // namespace kestrel::exporter
