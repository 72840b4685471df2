// The stand-in refuses what a QNN backend refuses: unknown ops, mistyped or missing parameters,
// outputs whose shape the op definition does not give, nodes out of order, wrong bindings,
// unregistered or foreign memory handles, double registration, contexts freed with memory
// registered. Registered memory is what a graph reads and writes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backends/qnn/qnn_op_def.h"
#include "backends/qnn/standin/standin_api.h"

namespace kestrel::qnn {
namespace {

QnnTensorSpec tensor(const std::string& name, QnnTensorType type, std::vector<uint32_t> dims,
                     QnnDataType data_type = QnnDataType::kFloat32) {
  QnnTensorSpec spec;
  spec.name = name;
  spec.type = type;
  spec.data_type = data_type;
  spec.dims = std::move(dims);
  return spec;
}

QnnOpSpec op(const std::string& name, const char* type, std::vector<QnnTensorId> in, std::vector<QnnTensorId> out,
             std::vector<QnnParam> params = {}) {
  QnnOpSpec spec;
  spec.name = name;
  spec.type = type;
  spec.inputs = std::move(in);
  spec.outputs = std::move(out);
  spec.params = std::move(params);
  return spec;
}

bool says(const Status& status, const std::string& text) {
  return !status.ok() && status.error().message().find(text) != std::string::npos;
}

class StandinGraph : public ::testing::Test {
 protected:
  void SetUp() override {
    context_ = *api_.create_context({});
    graph_ = *api_.create_graph(context_, "g", {});
  }
  QnnTensorId add(const QnnTensorSpec& spec) {
    auto id = api_.create_tensor(graph_, spec);
    EXPECT_TRUE(id.ok()) << id.error().to_string();
    return id.ok() ? *id : 0;
  }
  StandinApi api_;
  QnnContextHandle context_ = nullptr;
  QnnGraphHandle graph_ = nullptr;
};

TEST_F(StandinGraph, RefusesWhatTheOpDefinitionsRefuse) {
  const auto x = add(tensor("x", QnnTensorType::kAppWrite, {2, 4}));
  const auto w = add(tensor("w", QnnTensorType::kAppWrite, {3, 4}));
  const auto y = add(tensor("y", QnnTensorType::kNative, {2, 3}));
  const auto wrong = add(tensor("wrong", QnnTensorType::kNative, {3, 2}));
  const auto z = add(tensor("z", QnnTensorType::kAppRead, {2, 3}));
  EXPECT_TRUE(says(api_.add_node(graph_, op("a", "Conv9d", {x}, {y})), "does not know this op type"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("b", op::kFullyConnected, {x, w}, {wrong})),
                   "out[0] 'wrong' is QNN_DATATYPE_FLOAT_32 [3, 2], but the op gives QNN_DATATYPE_FLOAT_32 [2, 3]"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("c", op::kFullyConnected, {x, w}, {y},
                                            {{op::kFullyConnectedKeepDims, QnnScalar::uint32(1)}})),
                   "parameter 'keep_dims' is QNN_DATATYPE_UINT_32, expected QNN_DATATYPE_BOOL_8"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("d", op::kTranspose, {x}, {y})), "parameter 'perm' is missing"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("e", op::kSigmoid, {y}, {z})), "'y' is not produced by an earlier node"));
  ASSERT_TRUE(api_.add_node(graph_, op("f", op::kFullyConnected, {x, w}, {y})).ok());
  EXPECT_TRUE(says(api_.add_node(graph_, op("f", op::kSigmoid, {y}, {z})), "node name is taken"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("g", op::kSigmoid, {x}, {y})), "already written by another node"));
  EXPECT_TRUE(says(api_.add_node(graph_, op("h", op::kSigmoid, {y}, {x})), "outputs are NATIVE or APP_READ"));
  EXPECT_TRUE(says(api_.finalize(graph_), "output 'z' is never written"));
  ASSERT_TRUE(api_.add_node(graph_, op("i", op::kSigmoid, {y}, {z})).ok());
  ASSERT_TRUE(api_.finalize(graph_).ok());
  EXPECT_TRUE(says(api_.add_node(graph_, op("j", op::kSigmoid, {y}, {wrong})), "finalized"));
}

TEST_F(StandinGraph, TensorNamesAreUniqueInTheContext) {
  add(tensor("x", QnnTensorType::kAppWrite, {4}));
  auto second = api_.create_graph(context_, "h", {});
  ASSERT_TRUE(second.ok());
  auto clash = api_.create_tensor(*second, tensor("x", QnnTensorType::kAppWrite, {4}));
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message().find("taken in this context (by graph 'g')"), std::string::npos)
      << clash.error().message();
  EXPECT_FALSE(api_.create_graph(context_, "g", {}).ok()) << "graph names too";
}

TEST_F(StandinGraph, StaticDataMustFitItsTensor) {
  std::vector<float> values(5);
  auto spec = tensor("s", QnnTensorType::kStatic, {2, 3});
  spec.data = {reinterpret_cast<const uint8_t*>(values.data()), values.size() * 4};
  auto made = api_.create_tensor(graph_, spec);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.error().message().find("static data has 20 bytes"), std::string::npos);
  EXPECT_FALSE(api_.create_tensor(graph_, tensor("zero", QnnTensorType::kNative, {2, 0})).ok());
}

// x [4] -> Sigmoid -> a (APP_READ), ElementWiseAdd(x, x) -> b (APP_READ).
class StandinExecute : public StandinGraph {
 protected:
  void SetUp() override {
    StandinGraph::SetUp();
    auto x_spec = tensor("x", QnnTensorType::kAppWrite, {4});
    x_spec.mem_type = QnnMemType::kMemHandle;
    x_ = add(x_spec);
    a_ = add(tensor("a", QnnTensorType::kAppRead, {4}));
    b_ = add(tensor("b", QnnTensorType::kAppRead, {4}));
    ASSERT_TRUE(api_.add_node(graph_, op("sigmoid", op::kSigmoid, {x_}, {a_})).ok());
    ASSERT_TRUE(api_.add_node(graph_, op("double", op::kElementWiseAdd, {x_, x_}, {b_})).ok());
    ASSERT_TRUE(api_.finalize(graph_).ok());
  }
  QnnTensorBinding raw(QnnTensorId id, std::vector<float>& data) {
    QnnTensorBinding b;
    b.tensor = id;
    b.data = data.data();
    b.bytes = data.size() * sizeof(float);
    return b;
  }
  QnnTensorBinding handle(QnnTensorId id, QnnApiMemHandle h) {
    QnnTensorBinding b;
    b.tensor = id;
    b.mem_type = QnnMemType::kMemHandle;
    b.mem_handle = h;
    return b;
  }
  QnnMemDescriptor memory(std::vector<float>& data) {
    QnnMemDescriptor m;
    m.fd = 7;
    m.total = data.size() * sizeof(float);
    m.address = data.data();
    m.bytes = m.total;
    m.dims = {4};
    return m;
  }
  QnnTensorId x_ = 0, a_ = 0, b_ = 0;
};

TEST_F(StandinExecute, RegisteredMemoryIsWhatTheGraphReads) {
  std::vector<float> shared{0, 1, -2, 3}, a(4), b(4);
  auto h = api_.register_memory(context_, memory(shared));
  ASSERT_TRUE(h.ok()) << h.error().to_string();
  auto order = api_.graph_outputs(graph_);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(*order, (std::vector<QnnTensorId>{b_, a_})) << "reverse creation order";
  const QnnTensorBinding in[] = {handle(x_, *h)};
  const QnnTensorBinding out[] = {raw(b_, b), raw(a_, a)};
  ASSERT_TRUE(api_.execute(graph_, in, out).ok());
  for (int i = 0; i < 4; ++i) {
    EXPECT_FLOAT_EQ(b[i], 2 * shared[i]);
    EXPECT_NEAR(a[i], 1 / (1 + std::exp(-shared[i])), 1e-7);
  }
  shared[0] = 10;  // no copy was taken at registration: the next run sees the new value
  ASSERT_TRUE(api_.execute(graph_, in, out).ok());
  EXPECT_FLOAT_EQ(b[0], 20);
  const auto stats = api_.stats();
  EXPECT_EQ(stats.memhandle_bindings, 2u);
  EXPECT_EQ(stats.last_binding.at("x"), QnnMemType::kMemHandle);
  EXPECT_EQ(stats.last_binding.at("a"), QnnMemType::kRaw);
  ASSERT_TRUE(api_.deregister_memory(*h).ok());
}

TEST_F(StandinExecute, RefusesWrongBindings) {
  std::vector<float> x(4), a(4), b(4), small(3);
  auto h = api_.register_memory(context_, memory(x));
  ASSERT_TRUE(h.ok());
  const QnnTensorBinding in[] = {handle(x_, *h)};
  {
    const QnnTensorBinding out[] = {raw(a_, a), raw(b_, b)};
    EXPECT_TRUE(says(api_.execute(graph_, in, out), "output 0 is tensor 1, but this graph enumerates 'b'"));
  }
  {
    const QnnTensorBinding out[] = {raw(b_, b), raw(a_, small)};
    EXPECT_TRUE(says(api_.execute(graph_, in, out), "client buffer of 12 bytes"));
  }
  const QnnTensorBinding out[] = {raw(b_, b), raw(a_, a)};
  const QnnTensorBinding raw_in[] = {raw(x_, x)};
  EXPECT_TRUE(says(api_.execute(graph_, raw_in, out), "'x' was created for registered memory handles but got a client buffer"));
  // Memory of another context, and a handle that was deregistered.
  auto other = api_.create_context({});
  ASSERT_TRUE(other.ok());
  std::vector<float> elsewhere(4);
  auto foreign = api_.register_memory(*other, memory(elsewhere));
  ASSERT_TRUE(foreign.ok());
  const QnnTensorBinding foreign_in[] = {handle(x_, *foreign)};
  EXPECT_TRUE(says(api_.execute(graph_, foreign_in, out), "registered with another context"));
  ASSERT_TRUE(api_.deregister_memory(*h).ok());
  EXPECT_TRUE(says(api_.execute(graph_, in, out), "not registered (or was deregistered)"));
  EXPECT_TRUE(says(api_.deregister_memory(*h), "not registered"));
  ASSERT_TRUE(api_.deregister_memory(*foreign).ok());
  ASSERT_TRUE(api_.free_context(*other).ok());
}

TEST_F(StandinExecute, RegistersOncePerContextAndAddressAndFreesContextsOnlyWithoutRegistrations) {
  std::vector<float> x(4);
  auto h = api_.register_memory(context_, memory(x));
  ASSERT_TRUE(h.ok());
  auto again = api_.register_memory(context_, memory(x));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message().find("QNN_MEM_ERROR_ALREADY_REGISTERED"), std::string::npos);
  auto m = memory(x);
  m.dims = {8};
  EXPECT_FALSE(api_.register_memory(context_, m).ok()) << "a shape bigger than the memory";
  EXPECT_TRUE(says(api_.free_context(context_), "still registered"));
  ASSERT_TRUE(api_.deregister_memory(*h).ok());
  ASSERT_TRUE(api_.free_context(context_).ok());
  EXPECT_EQ(api_.stats().contexts_live, 0u);
  EXPECT_FALSE(api_.finalize(graph_).ok()) << "graphs go with their context";
}

}  // namespace
}  // namespace kestrel::qnn
