// Each Kestrel op lowered to QNN ops and executed by the stand-in, against the naive float64
// references of tests/kernels/reference.h (written from docs/ops.md, independent of both the
// lowering and the portable kernels).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "kernels/reference.h"
#include "backends/qnn/lowering/lowering.h"
#include "kestrel/backends/qnn/op_support.h"
#include "qnn/qnn_delegate_run.h"

namespace kestrel::qnn {
namespace {

namespace ref = kernels::reference;
using exporter::Graph;
using exporter::InputKind;
using exporter::ValueId;
using testing::parameter;
using testing::run_on_standin;

std::vector<double> random_values(size_t n, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(n);
  for (double& v : out) v = static_cast<float>(dist(rng));  // representable in f32
  return out;
}

// The values an f16 tensor actually holds.
std::vector<double> as_f16(const std::vector<double>& values) {
  std::vector<double> out;
  for (double v : values) out.push_back(f16_to_f32(f32_to_f16(static_cast<float>(v))));
  return out;
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want, double tol = 2e-5) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i]))))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  return ::testing::AssertionSuccess();
}

bool has(const std::vector<std::string>& ops, const std::string& op) {
  return std::find(ops.begin(), ops.end(), op) != ops.end();
}

class QnnLowering : public ::testing::TestWithParam<DType> {};

TEST_P(QnnLowering, LinearIsFullyConnectedBetweenReshapes) {
  const DType wt = GetParam();
  Graph g;
  const auto xv = random_values(2 * 3 * 16, 1), wv = random_values(8 * 16, 2), bv = random_values(8, 3);
  auto x = g.add_input("x", DType::kF32, {2, 3, 16}, InputKind::kUser);
  auto w = parameter(g, "w", wt, {8, 16}, wv);
  auto b = parameter(g, "b", DType::kF32, {8}, bv);
  g.mark_output(g.add_op("linear", {x, w, b}, "y", DType::kF32, {2, 3, 8}));
  auto run = run_on_standin(g, {{x, xv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::linear(xv, 6, 16, wt == DType::kF16 ? as_f16(wv) : wv, 8, bv)));
  EXPECT_EQ(run->qnn_op_types, (std::vector<std::string>{"FullyConnected", "Reshape"}));
}

TEST_P(QnnLowering, RmsNormAndLayerNorm) {
  const DType wt = GetParam();
  Graph g;
  const auto xv = random_values(2 * 3 * 16, 4), wv = random_values(16, 5, 0.5, 1.5), bv = random_values(16, 6);
  auto x = g.add_input("x", DType::kF32, {2, 3, 16}, InputKind::kUser);
  auto w = parameter(g, "w", wt, {16}, wv);
  auto b = parameter(g, "b", wt, {16}, bv);
  g.mark_output(g.add_op("rms_norm", {x, w}, "r", DType::kF32, {2, 3, 16}, {{"eps", 1e-5}}));
  g.mark_output(g.add_op("layer_norm", {x, w, b}, "l", DType::kF32, {2, 3, 16}, {{"eps", 1e-4}}));
  auto run = run_on_standin(g, {{x, xv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  const auto w_held = wt == DType::kF16 ? as_f16(wv) : wv, b_held = wt == DType::kF16 ? as_f16(bv) : bv;
  EXPECT_TRUE(close(run->outputs[0], ref::rms_norm(xv, 16, w_held, 1e-5)));
  EXPECT_TRUE(close(run->outputs[1], ref::layer_norm(xv, 16, w_held, b_held, 1e-4)));
  EXPECT_TRUE(has(run->qnn_op_types, "RmsNorm") && has(run->qnn_op_types, "LayerNorm"));
}

TEST_P(QnnLowering, EmbeddingIsGather) {
  const DType wt = GetParam();
  Graph g;
  const auto tv = random_values(10 * 6, 7);
  auto table = parameter(g, "table", wt, {10, 6}, tv);
  auto ids = g.add_input("ids", DType::kI32, {1, 5}, InputKind::kUser);
  g.mark_output(g.add_op("embedding", {table, ids}, "e", DType::kF32, {1, 5, 6}));
  const std::vector<int64_t> id_values{3, 0, 9, 3, 7};
  auto run = run_on_standin(g, {{ids, {3, 0, 9, 3, 7}}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::embedding(wt == DType::kF16 ? as_f16(tv) : tv, 6, id_values), 0));
  EXPECT_TRUE(has(run->qnn_op_types, "Gather"));
  EXPECT_EQ(has(run->qnn_op_types, "Cast"), wt == DType::kF16) << "an f16 table is cast to the f32 output";
}

INSTANTIATE_TEST_SUITE_P(Weights, QnnLowering, ::testing::Values(DType::kF32, DType::kF16),
                         [](const auto& info) { return std::string(dtype_name(info.param)); });

TEST(QnnLoweringOps, MatMulSoftmaxAndElementWise) {
  Graph g;
  const auto av = random_values(2 * 3 * 4 * 5, 8), bv = random_values(2 * 3 * 5 * 6, 9), cv = random_values(6, 10);
  auto a = g.add_input("a", DType::kF32, {2, 3, 4, 5}, InputKind::kUser);
  auto b = g.add_input("b", DType::kF32, {2, 3, 5, 6}, InputKind::kUser);
  auto c = g.add_input("c", DType::kF32, {6}, InputKind::kUser);
  auto m = g.add_op("matmul", {a, b}, "m", DType::kF32, {2, 3, 4, 6});
  auto sum = g.add_op("add", {m, c}, "sum", DType::kF32, {2, 3, 4, 6});
  auto prod = g.add_op("mul", {sum, c}, "prod", DType::kF32, {2, 3, 4, 6});
  g.mark_output(g.add_op("softmax", {prod}, "s_last", DType::kF32, {2, 3, 4, 6}, {{"axis", int64_t{-1}}}));
  g.mark_output(g.add_op("softmax", {prod}, "s_axis1", DType::kF32, {2, 3, 4, 6}, {{"axis", int64_t{1}}}));
  auto run = run_on_standin(g, {{a, av}, {b, bv}, {c, cv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  auto want = ref::matmul(av, bv, 6, 4, 5, 6);
  for (size_t i = 0; i < want.size(); ++i) want[i] = (want[i] + cv[i % 6]) * cv[i % 6];
  EXPECT_TRUE(close(run->outputs[0], ref::softmax(want, {2, 3, 4, 6}, 3)));
  EXPECT_TRUE(close(run->outputs[1], ref::softmax(want, {2, 3, 4, 6}, 1)));
  EXPECT_EQ(run->qnn_op_types,
            (std::vector<std::string>{"ElementWiseAdd", "ElementWiseMultiply", "MatMul", "Softmax"}));
}

TEST(QnnLoweringOps, ActivationsAreDecomposed) {
  Graph g;
  const auto xv = random_values(3 * 8, 11, -4, 4);
  auto x = g.add_input("x", DType::kF32, {3, 8}, InputKind::kUser);
  g.mark_output(g.add_op("silu", {x}, "silu", DType::kF32, {3, 8}));
  g.mark_output(g.add_op("gelu", {x}, "gelu", DType::kF32, {3, 8}, {{"approximate", std::string("none")}}));
  g.mark_output(g.add_op("gelu", {x}, "gelu_tanh", DType::kF32, {3, 8}, {{"approximate", std::string("tanh")}}));
  auto run = run_on_standin(g, {{x, xv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  std::vector<double> silu, gelu, gelu_tanh;
  for (double v : xv) {
    silu.push_back(ref::silu(v));
    gelu.push_back(ref::gelu_erf(v));
    gelu_tanh.push_back(ref::gelu_tanh(v));
  }
  EXPECT_TRUE(close(run->outputs[0], silu));
  EXPECT_TRUE(close(run->outputs[1], gelu));
  EXPECT_TRUE(close(run->outputs[2], gelu_tanh));
  for (const char* op : {"Sigmoid", "Gelu", "Tanh", "ElementWiseMultiply", "ElementWiseAdd"})
    EXPECT_TRUE(has(run->qnn_op_types, op)) << op;
}

TEST(QnnLoweringOps, LayoutOps) {
  Graph g;
  const auto xv = random_values(2 * 3 * 4 * 5, 12);
  auto x = g.add_input("x", DType::kF32, {2, 3, 4, 5}, InputKind::kUser);
  g.mark_output(g.add_op("transpose", {x}, "t", DType::kF32, {2, 4, 3, 5},
                         {{"perm", std::vector<int64_t>{0, 2, 1, 3}}}));
  g.mark_output(g.add_op("slice", {x}, "s", DType::kF32, {2, 3, 2, 5},
                         {{"axis", int64_t{2}}, {"start", int64_t{1}}, {"end", int64_t{-1}}}));
  g.mark_output(g.add_op("reshape", {x}, "r", DType::kF32, {6, 20}, {{"shape", std::vector<int64_t>{6, 20}}}));
  auto h = g.add_op("cast", {x}, "h", DType::kF16, {2, 3, 4, 5}, {{"dtype", std::string("f16")}});
  g.mark_output(g.add_op("cast", {h}, "back", DType::kF32, {2, 3, 4, 5}, {{"dtype", std::string("f32")}}));
  auto run = run_on_standin(g, {{x, xv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::transpose(xv, {2, 3, 4, 5}, {0, 2, 1, 3}), 0));
  EXPECT_TRUE(close(run->outputs[1], ref::slice(xv, {2, 3, 4, 5}, 2, 1, 3), 0));
  EXPECT_TRUE(close(run->outputs[2], xv, 0));
  EXPECT_TRUE(close(run->outputs[3], as_f16(xv), 0));
  for (const char* op : {"Transpose", "StridedSlice", "Reshape", "Cast"}) EXPECT_TRUE(has(run->qnn_op_types, op)) << op;
}

class QnnRopeLowering : public ::testing::TestWithParam<std::string> {};

TEST_P(QnnRopeLowering, MatchesTheReference) {
  const std::string style = GetParam();
  Graph g;
  const int64_t B = 1, H = 2, T = 3, Dh = 8, P = 16;
  const auto xv = random_values(B * H * T * Dh, 13), cv = random_values(P * Dh / 2, 14), sv = random_values(P * Dh / 2, 15);
  auto x = g.add_input("x", DType::kF32, {B, H, T, Dh}, InputKind::kUser);
  auto pos = g.add_input("positions", DType::kI32, {T}, InputKind::kUser);
  auto cos = g.add_input("cos", DType::kF32, {P, Dh / 2}, InputKind::kConstant,
                         exporter::ConstantData::owned(testing::encode(DType::kF32, cv)));
  auto sin = g.add_input("sin", DType::kF32, {P, Dh / 2}, InputKind::kConstant,
                         exporter::ConstantData::owned(testing::encode(DType::kF32, sv)));
  g.mark_output(g.add_op("rope", {x, pos, cos, sin}, "r", DType::kF32, {B, H, T, Dh}, {{"style", style}}));
  auto run = run_on_standin(g, {{x, xv}, {pos, {5, 0, 15}}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::rope(xv, B * H, T, Dh, {5, 0, 15}, cv, sv, style)));
  for (const char* op : {"Gather", "StridedSlice", "ElementWiseSubtract", "Concat"})
    EXPECT_TRUE(has(run->qnn_op_types, op)) << op;
}

INSTANTIATE_TEST_SUITE_P(Styles, QnnRopeLowering, ::testing::Values("half", "interleaved"));

struct AttentionCase {
  int64_t Hq, Hkv, T;
  std::vector<int64_t> positions;
};

void PrintTo(const AttentionCase& c, std::ostream* out) {
  *out << "Hq " << c.Hq << ", Hkv " << c.Hkv << ", T " << c.T;
}

class QnnAttentionLowering : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(QnnAttentionLowering, CausalOverTheStaticCache) {
  const auto& c = GetParam();
  const int64_t B = 1, C = 12, Dh = 8;
  const double scale = 1 / std::sqrt(8.0);
  Graph g;
  const auto qv = random_values(B * c.Hq * c.T * Dh, 16), kv = random_values(B * c.Hkv * C * Dh, 17),
             vv = random_values(B * c.Hkv * C * Dh, 18);
  auto q = g.add_input("q", DType::kF32, {B, c.Hq, c.T, Dh}, InputKind::kUser);
  auto k = g.add_input("k", DType::kF32, {B, c.Hkv, C, Dh}, InputKind::kBuffer);
  auto v = g.add_input("v", DType::kF32, {B, c.Hkv, C, Dh}, InputKind::kBuffer);
  auto pos = g.add_input("positions", DType::kI32, {c.T}, InputKind::kUser);
  g.mark_output(g.add_op("attention", {q, k, v, pos}, "a", DType::kF32, {B, c.Hq, c.T, Dh}, {{"scale", scale}}));
  std::vector<double> pos_values(c.positions.begin(), c.positions.end());
  auto run = run_on_standin(g, {{q, qv}, {k, kv}, {v, vv}, {pos, pos_values}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::attention(qv, kv, vv, B, c.Hq, c.Hkv, c.T, C, Dh, c.positions, scale)));
  for (const char* op : {"MatMul", "ElementWiseLessEqual", "ElementWiseSelect", "Softmax"})
    EXPECT_TRUE(has(run->qnn_op_types, op)) << op;
}

INSTANTIATE_TEST_SUITE_P(Heads, QnnAttentionLowering,
                         ::testing::Values(AttentionCase{2, 2, 3, {0, 1, 2}}, AttentionCase{4, 2, 3, {4, 5, 6}},
                                           AttentionCase{6, 2, 1, {11}}, AttentionCase{4, 1, 4, {2, 3, 4, 5}}),
                         [](const auto& info) {
                           return fmt::format("q{}_kv{}_t{}", info.param.Hq, info.param.Hkv, info.param.T);
                         });

TEST(QnnLoweringOps, IndexCopyIsScatterNd) {
  Graph g;
  const auto dv = random_values(1 * 2 * 10 * 4, 19), sv = random_values(1 * 2 * 3 * 4, 20);
  const auto d0 = random_values(6 * 4, 21), s0 = random_values(2 * 4, 22);
  auto dst = g.add_input("cache", DType::kF32, {1, 2, 10, 4}, InputKind::kBuffer);
  auto src = g.add_input("slice", DType::kF32, {1, 2, 3, 4}, InputKind::kUser);
  auto index = g.add_input("index", DType::kI32, {3}, InputKind::kUser);
  auto rows = g.add_input("rows", DType::kF32, {6, 4}, InputKind::kBuffer);
  auto row_src = g.add_input("row_src", DType::kF32, {2, 4}, InputKind::kUser);
  auto row_index = g.add_input("row_index", DType::kI32, {2}, InputKind::kUser);
  g.mark_output(g.add_op("index_copy", {dst, index, src}, "updated", DType::kF32, {1, 2, 10, 4}, {{"axis", int64_t{2}}}));
  g.mark_output(g.add_op("index_copy", {rows, row_index, row_src}, "rows_updated", DType::kF32, {6, 4},
                         {{"axis", int64_t{0}}}));
  auto run = run_on_standin(g, {{dst, dv}, {src, sv}, {index, {7, 1, 4}}, {rows, d0}, {row_src, s0}, {row_index, {5, 0}}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_TRUE(close(run->outputs[0], ref::index_copy(dv, {1, 2, 10, 4}, 2, {7, 1, 4}, sv), 0));
  EXPECT_TRUE(close(run->outputs[1], ref::index_copy(d0, {6, 4}, 0, {5, 0}, s0), 0));
  EXPECT_TRUE(has(run->qnn_op_types, "ScatterNd"));
}

// The stand-in enumerates outputs in reverse creation order: the delegate reports that order
// with each output's exported index, and the values still land where they belong.
TEST(QnnLoweringOps, OutputsAreReportedInTheGraphsOrderWithTheirExportedIndex) {
  Graph g;
  const auto xv = random_values(4, 23);
  auto x = g.add_input("x", DType::kF32, {4}, InputKind::kUser);
  auto two = parameter(g, "two", DType::kF32, {4}, {2, 2, 2, 2});
  g.mark_output(g.add_op("add", {x, two}, "plus", DType::kF32, {4}));
  g.mark_output(g.add_op("mul", {x, two}, "times", DType::kF32, {4}));
  g.mark_output(g.add_op("silu", {x}, "silu", DType::kF32, {4}));
  auto run = run_on_standin(g, {{x, xv}});
  ASSERT_TRUE(run.ok()) << run.error().to_string();
  EXPECT_EQ(run->output_order, (std::vector<int32_t>{2, 1, 0}));
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(run->outputs[0][i], static_cast<float>(xv[i] + 2));
    EXPECT_DOUBLE_EQ(run->outputs[1][i], static_cast<float>(xv[i] * 2));
    EXPECT_NEAR(run->outputs[2][i], ref::silu(xv[i]), 1e-6);
  }
}

// Windowed attention and partial rotary (attributes from another branch of the op set) are
// refused by the op-support table, so they stay portable; and should a payload carry one
// anyway, the lowering refuses it rather than compute something else.
TEST(QnnLoweringOps, WindowedAttentionAndPartialRotaryAreRefused) {
  Graph g;
  auto q = g.add_input("q", DType::kF32, {1, 2, 3, 8}, InputKind::kUser);
  auto k = g.add_input("k", DType::kF32, {1, 2, 12, 8}, InputKind::kBuffer);
  auto pos = g.add_input("positions", DType::kI32, {3}, InputKind::kUser);
  auto cs = parameter(g, "cs", DType::kF32, {16, 3}, std::vector<double>(48, 0.5));
  auto partial = g.add_op("rope", {q, pos, cs, cs}, "partial", DType::kF32, {1, 2, 3, 8},
                          {{"style", std::string("half")}, {"rotary_dim", int64_t{6}}});
  auto windowed = g.add_op("attention", {q, k, k, pos}, "windowed", DType::kF32, {1, 2, 3, 8},
                           {{"scale", 0.25}, {"window", int64_t{4}}});
  auto plain = g.add_op("attention", {q, k, k, pos}, "plain", DType::kF32, {1, 2, 3, 8},
                        {{"scale", 0.25}, {"window", int64_t{0}}});
  for (auto v : {partial, windowed, plain}) g.mark_output(v);
  auto check = [&](ValueId out) { return check_qnn_node(g, *g.find_node(g.value(out).producer)); };
  ASSERT_FALSE(check(partial).ok());
  EXPECT_NE(check(partial).error().message().find("partial rotary"), std::string::npos);
  ASSERT_FALSE(check(windowed).ok());
  EXPECT_NE(check(windowed).error().message().find("sliding window"), std::string::npos);
  EXPECT_TRUE(check(plain).ok()) << "window 0 is plain causal attention";

  auto specs = QnnCompileSpecBuilder().build();
  auto bytes = serialize_qnn_payload(g, *specs);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto payload = parse_qnn_payload(*bytes);
  ASSERT_TRUE(payload.ok());
  auto lowered = lower_to_qnn(*payload, [&](const QnnPayloadValue& value) -> Result<std::span<const uint8_t>> {
    return g.value(value.id).data->held_bytes();
  });
  ASSERT_FALSE(lowered.ok());
  EXPECT_NE(lowered.error().message().find("partial rotary"), std::string::npos) << lowered.error().message();
}

}  // namespace
}  // namespace kestrel::qnn
