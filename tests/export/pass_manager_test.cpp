#include <gtest/gtest.h>

#include "export/test_backend.h"
#include "kestrel/export/pass_manager.h"

namespace kestrel::exporter {
namespace {

using testing::LambdaPass;
using testing::TestBackend;

Graph small_graph() {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {1, 4}, InputKind::kUser);
  ValueId a = g.add_op("linear", {x, x}, "a", DType::kF32, {1, 4});
  ValueId b = g.add_op("add", {a, x}, "b", DType::kF32, {1, 4});
  ValueId c = g.add_op("mul", {b, a}, "c", DType::kF32, {1, 4});
  g.mark_output(c);
  return g;
}

std::shared_ptr<Partitioner> partitioner_for(std::shared_ptr<TestBackend> backend) {
  auto p = Partitioner::from_options(std::move(backend), {});
  EXPECT_TRUE(p.ok()) << p.error().to_string();
  return std::make_shared<Partitioner>(std::move(p).value());
}

bool has_delegate(const Graph& graph) {
  for (const Node& node : graph.nodes())
    if (node.op == "delegate") return true;
  return false;
}

TEST(PassManager, CallerPassesThenEdgeTransformsThenPartitioning) {
  std::vector<std::string> log;
  auto check_not_partitioned = [&log](const std::string& who) {
    return [&log, who](Graph& graph) -> Status {
      if (has_delegate(graph)) return Error(ErrorCode::kInternal, who + " ran after partitioning");
      return ok_status();
    };
  };
  auto first = std::make_shared<TestBackend>(std::set<std::string>{"linear"}, testing::test_backend_option_specs(),
                                             "first");
  auto second = std::make_shared<TestBackend>(std::set<std::string>{"add", "mul"},
                                              testing::test_backend_option_specs(), "second");
  first->transforms.push_back(std::make_shared<LambdaPass>("t1", check_not_partitioned("t1"), &log));
  second->transforms.push_back(std::make_shared<LambdaPass>("t2", check_not_partitioned("t2"), &log));
  second->transforms.push_back(std::make_shared<LambdaPass>("t3", check_not_partitioned("t3"), &log));

  PassManager manager;
  // Added in an order different from the one they run in.
  manager.add_partitioner(partitioner_for(first));
  manager.add_pass(std::make_shared<LambdaPass>("p1", check_not_partitioned("p1"), &log));
  manager.add_partitioner(partitioner_for(second));
  manager.add_pass(std::make_shared<LambdaPass>("p2", check_not_partitioned("p2"), &log));

  Graph g = small_graph();
  auto report = manager.run(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(log, (std::vector<std::string>{"p1", "p2", "t1", "t2", "t3"}));
  EXPECT_EQ(report->executed, (std::vector<std::string>{"pass:p1", "pass:p2", "transform:first:t1",
                                                        "transform:second:t2", "transform:second:t3",
                                                        "partition:first", "partition:second"}));
  ASSERT_EQ(report->partitions.size(), 2u);
  EXPECT_EQ(report->partitions[0].delegated_nodes, 1);  // linear
  EXPECT_EQ(report->partitions[1].delegated_nodes, 2);  // add, mul
  ASSERT_TRUE(g.validate().ok());
  ASSERT_EQ(g.delegates().size(), 2u);
  EXPECT_EQ(g.delegates()[0].backend_id, "first");
  EXPECT_EQ(g.delegates()[1].backend_id, "second");
  EXPECT_EQ(g.nodes().size(), 2u);
}

TEST(PassManager, CallerPassOutputIsWhatTransformsSee) {
  // The caller pass renames gelu -> fused_add, the backend transform rewrites fused_add -> add:
  // the transform only finds its op because the caller pass already ran.
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
  ValueId a = g.add_op("add", {x, x}, "a", DType::kF32, {4});
  ValueId b = g.add_op("gelu", {a}, "b", DType::kF32, {4});
  ValueId c = g.add_op("mul", {b, a}, "c", DType::kF32, {4});
  g.mark_output(c);
  auto backend = std::make_shared<TestBackend>();
  backend->transforms.push_back(testing::rename_op_pass("fused_add", "add"));
  PassManager manager;
  manager.add_pass(testing::rename_op_pass("gelu", "fused_add"));
  manager.add_partitioner(partitioner_for(backend));
  auto report = manager.run(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->partitions.at(0).partitions, 1);
  EXPECT_EQ(report->partitions.at(0).portable_nodes, 0);
  EXPECT_EQ(report->executed, (std::vector<std::string>{"pass:rename_gelu_to_fused_add",
                                                        "transform:test:rename_fused_add_to_add", "partition:test"}));
}

TEST(PassManager, ErrorNamesThePassThatBrokeTheGraph) {
  {
    PassManager manager;
    manager.add_pass(std::make_shared<LambdaPass>("ok", nullptr));
    manager.add_pass(std::make_shared<LambdaPass>("breaker", [](Graph& graph) {
      graph.nodes()[0].inputs[0] = 1000;
      return ok_status();
    }));
    Graph g = small_graph();
    auto report = manager.run(g);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message().find("pass 'breaker' left an invalid graph"), std::string::npos)
        << report.error().message();
  }
  {
    PassManager manager;
    manager.add_pass(std::make_shared<LambdaPass>("refuser", [](Graph&) -> Status {
      return Error(ErrorCode::kUnsupported, "cannot");
    }));
    Graph g = small_graph();
    auto report = manager.run(g);
    ASSERT_FALSE(report.ok());
    EXPECT_EQ(report.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(report.error().message().find("pass 'refuser' failed: cannot"), std::string::npos)
        << report.error().message();
  }
  {
    auto backend = std::make_shared<TestBackend>();
    backend->transforms.push_back(std::make_shared<LambdaPass>("reorder", [](Graph& graph) {
      std::swap(graph.nodes()[0], graph.nodes()[2]);
      return ok_status();
    }));
    PassManager manager;
    manager.add_partitioner(partitioner_for(backend));
    Graph g = small_graph();
    auto report = manager.run(g);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message().find("edge transform 'reorder' of backend 'test'"), std::string::npos)
        << report.error().message();
  }
  {
    PassManager manager;
    Graph g = small_graph();
    g.mark_output(999);
    auto report = manager.run(g);
    ASSERT_FALSE(report.ok());
    EXPECT_NE(report.error().message().find("before any pass"), std::string::npos);
  }
}

TEST(PassManager, NoPassesNoPartitionersIsANoOp) {
  PassManager manager;
  Graph g = small_graph();
  auto report = manager.run(g);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->executed.empty());
  EXPECT_TRUE(report->partitions.empty());
  EXPECT_EQ(g.nodes().size(), 3u);
}

}  // namespace
}  // namespace kestrel::exporter
