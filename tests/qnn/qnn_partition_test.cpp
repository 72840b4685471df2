#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/op_support.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/export/pass_manager.h"
#include "backends/qnn/edge_transforms.h"
#include "qnn/qnn_test_graphs.h"

namespace kestrel::qnn {
namespace {

using exporter::Graph;
using exporter::InputKind;
using exporter::NodeId;
using exporter::OptionMap;
using testing::decoder_layer;
using testing::LayerIds;

exporter::Partitioner make_partitioner(const OptionMap& options = {}) {
  auto partitioner = QnnPartitioner::from_options(options);
  EXPECT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  return std::move(partitioner).value();
}

std::set<NodeId> delegated(const Graph& g) {
  std::set<NodeId> ids;
  for (const auto& d : g.delegates()) ids.insert(d.original_nodes.begin(), d.original_nodes.end());
  return ids;
}

// What `kestrel export --backend qnn` does to a method graph: the QNN edge transforms, then
// partitioning.
Result<exporter::PartitionReport> partition(Graph& g, const OptionMap& options = {}) {
  exporter::PassManager pm;
  pm.add_partitioner(std::make_shared<const exporter::Partitioner>(make_partitioner(options)));
  KESTREL_ASSIGN_OR_RETURN(auto report, pm.run(g));
  EXPECT_EQ(report.executed, (std::vector<std::string>{"transform:qnn:narrow_index_inputs", "partition:qnn"}));
  return report.partitions.at(0);
}

std::multiset<std::string> portable_ops(const Graph& g) {
  std::multiset<std::string> ops;
  for (const auto& n : g.nodes())
    if (n.op != "delegate") ops.insert(n.op);
  return ops;
}

TEST(QnnOpSupport, DecoderLayerOpsAreSupported) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  for (const auto& node : g.nodes()) {
    Status status = check_qnn_node(g, node);
    EXPECT_TRUE(status.ok()) << node.op << ": " << status.error().to_string();
  }
}

// QNN HTP has no 64-bit integers: the nodes the table accepts with i64 indices get them as i32
// from the edge transform; a partition that still carries an i64 index (partitioned without
// the transform) is refused by the lowering at export.
TEST(QnnOpSupport, I64IndicesAreCastBeforeTheyReachQnn) {
  LayerIds ids;
  Graph without_transform = decoder_layer(ids);
  auto refused = make_partitioner().partition(without_transform);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("i64 has no QNN HTP tensor type"), std::string::npos)
      << refused.error().message();
  Graph g = decoder_layer(ids);
  ASSERT_TRUE(partition(g).ok());
  for (const auto& delegate : g.delegates()) {
    auto payload = parse_qnn_payload(delegate.payload);
    ASSERT_TRUE(payload.ok());
    for (const auto& value : payload->values) EXPECT_NE(value.dtype, DType::kI64) << value.name;
  }
}

TEST(QnnOpSupport, TableDocumentsEveryOpOfTheOpSet) {
  for (const char* op : {"embedding", "rms_norm", "layer_norm", "linear", "matmul", "rope", "softmax", "attention",
                         "silu", "gelu", "mul", "add", "argmax", "index_copy", "reshape", "transpose", "slice",
                         "cast"}) {
    const QnnOpRule* rule = find_qnn_op_rule(op);
    ASSERT_NE(rule, nullptr) << op;
  }
  EXPECT_EQ(find_qnn_op_rule("conv2d"), nullptr);
}

TEST(QnnOpSupport, DtypeRules) {
  Graph g;
  auto x = g.add_input("x", DType::kF32, {1, 4, 64}, InputKind::kUser);
  auto wf16 = g.add_input("wf16", DType::kF16, {32, 64}, InputKind::kParameter, testing::filled(DType::kF16, {32, 64}, 1));
  auto wq8 = g.add_input("wq8", DType::kQ8, {32, 64}, InputKind::kParameter, testing::filled(DType::kQ8, {32, 64}, 2));
  auto wbf16 = g.add_input("wbf16", DType::kBF16, {32, 64}, InputKind::kParameter, testing::filled(DType::kBF16, {32, 64}, 3));
  auto nbf16 = g.add_input("nbf16", DType::kBF16, {64}, InputKind::kParameter, testing::filled(DType::kBF16, {64}, 4));
  auto ids = g.add_input("ids", DType::kI64, {1, 4}, InputKind::kUser);
  auto a = g.add_op("linear", {x, wf16}, "a", DType::kF32, {1, 4, 32});
  auto b = g.add_op("linear", {x, wq8}, "b", DType::kF32, {1, 4, 32});
  auto c = g.add_op("linear", {x, wbf16}, "c", DType::kF32, {1, 4, 32});
  auto n = g.add_op("rms_norm", {x, nbf16}, "n", DType::kF32, {1, 4, 64}, {{"eps", 1e-5}});
  auto am = g.add_op("argmax", {a}, "am", DType::kI64, {1, 4});
  auto e = g.add_op("embedding", {wf16, ids}, "e", DType::kF32, {1, 4, 64});
  auto eq8 = g.add_op("embedding", {wq8, ids}, "eq8", DType::kF32, {1, 4, 64});
  auto bad_ids = g.add_op("embedding", {wf16, x}, "bad_ids", DType::kF32, {1, 4, 64, 64});
  auto s = g.add_op("silu", {a}, "s", DType::kF32, {1, 4, 32});
  auto sm = g.add_op("softmax", {s}, "sm", DType::kF32, {1, 4, 32}, {{"axis", int64_t{-1}}});
  auto ca = g.add_op("cast", {sm}, "ca", DType::kF16, {1, 4, 32}, {{"dtype", std::string("f16")}});
  auto cb = g.add_op("cast", {sm}, "cb", DType::kBF16, {1, 4, 32}, {{"dtype", std::string("bf16")}});
  auto ir = g.add_op("reshape", {ids}, "ir", DType::kI64, {4}, {{"shape", std::vector<int64_t>{4}}});
  for (auto v : {b, c, n, am, e, eq8, bad_ids, ca, cb, ir}) g.mark_output(v);

  auto ok = [&](exporter::ValueId out) { return check_qnn_node(g, *g.find_node(g.value(out).producer)).ok(); };
  EXPECT_TRUE(ok(a)) << "f16 weights";
  EXPECT_FALSE(ok(b)) << "q8 weights stay portable";
  EXPECT_FALSE(ok(c)) << "bf16 weights stay portable";
  EXPECT_FALSE(ok(n)) << "bf16 norm weight stays portable";
  EXPECT_FALSE(ok(am)) << "argmax: i64 output";
  EXPECT_TRUE(ok(e)) << "f16 table, i64 ids (cast to i32 by the edge transform)";
  EXPECT_FALSE(ok(eq8)) << "q8 table";
  EXPECT_FALSE(ok(bad_ids)) << "float ids";
  EXPECT_TRUE(ok(s));
  EXPECT_TRUE(ok(sm));
  EXPECT_TRUE(ok(ca));
  EXPECT_FALSE(ok(cb));
  EXPECT_FALSE(ok(ir)) << "integer reshape";

  Status why = check_qnn_node(g, *g.find_node(g.value(b).producer));
  EXPECT_EQ(why.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(why.error().message().find("wq8"), std::string::npos) << why.error().message();
  EXPECT_NE(why.error().message().find("q8"), std::string::npos);
}

TEST(QnnOpSupport, ShapeAndAttributeRules) {
  Graph g;
  auto q = g.add_input("q", DType::kF32, {1, 3, 4, 16}, InputKind::kUser);
  auto k = g.add_input("k", DType::kF32, {1, 2, 16, 16}, InputKind::kUser);
  auto pos = g.add_input("pos", DType::kI64, {4}, InputKind::kUser);
  auto big = g.add_input("big", DType::kF32, {1, 1, 1, 1, 1, 2}, InputKind::kUser);
  auto dyn = g.add_input("dyn", DType::kF32, {1, -1}, InputKind::kUser);
  auto cs = g.add_input("cs", DType::kF32, {16, 8}, InputKind::kConstant, testing::filled(DType::kF32, {16, 8}, 1));
  auto gqa = g.add_op("attention", {q, k, k, pos}, "gqa", DType::kF32, {1, 3, 4, 16}, {{"scale", 0.25}});
  auto r6 = g.add_op("silu", {big}, "r6", DType::kF32, {1, 1, 1, 1, 1, 2});
  auto d = g.add_op("silu", {dyn}, "d", DType::kF32, {1, -1});
  auto rope = g.add_op("rope", {k, pos, cs, cs}, "rope", DType::kF32, {1, 2, 16, 16}, {{"style", std::string("odd")}});
  // The CPU's tokens-first layout (fold_head_transposes) is not lowered; the default is.
  auto k_tokens = g.add_input("k_tokens", DType::kF32, {1, 16, 2, 16}, InputKind::kUser);
  auto rope_tokens = g.add_op("rope", {k_tokens, pos, cs, cs}, "rope_tokens", DType::kF32, {1, 16, 2, 16},
                              {{"style", std::string("half")}, {"layout", std::string("bthd")}});
  auto rope_heads = g.add_op("rope", {k, pos, cs, cs}, "rope_heads", DType::kF32, {1, 2, 16, 16},
                             {{"style", std::string("half")}, {"layout", std::string("bhtd")}});
  auto q2 = g.add_input("q2", DType::kF32, {1, 4, 4, 16}, InputKind::kUser);
  auto tokens_attention = g.add_op("attention", {q2, k, k, pos}, "tokens_attention", DType::kF32, {1, 4, 4, 16},
                                   {{"scale", 0.25}, {"layout", std::string("bthd")}});
  for (auto v : {gqa, r6, d, rope, rope_tokens, rope_heads, tokens_attention}) g.mark_output(v);
  auto ok = [&](exporter::ValueId out) { return check_qnn_node(g, *g.find_node(g.value(out).producer)).ok(); };
  EXPECT_FALSE(ok(gqa)) << "3 query heads over 2 kv heads";
  EXPECT_FALSE(ok(r6)) << "rank 6";
  EXPECT_FALSE(ok(d)) << "dynamic dim";
  EXPECT_FALSE(ok(rope)) << "unknown rope style";
  EXPECT_FALSE(ok(rope_tokens)) << "rope in the tokens-first layout";
  EXPECT_TRUE(ok(rope_heads)) << "rope in the default layout, named";
  EXPECT_FALSE(ok(tokens_attention)) << "attention in the tokens-first layout";
}

TEST(QnnPartition, WholeLayerIsOneDelegate) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  const size_t nodes = g.nodes().size();
  auto report = partition(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->partitions, 1);
  EXPECT_EQ(report->delegated_nodes, static_cast<int>(nodes));
  // Only the two i64 -> i32 casts of tokens and positions run on the CPU.
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"cast", 2}}));
  ASSERT_EQ(g.delegates().size(), 1u);
  EXPECT_EQ(g.delegates()[0].backend_id, "qnn");
  for (const auto& node : g.nodes()) {
    if (node.op != "cast") continue;
    EXPECT_EQ(g.value(node.inputs[0]).dtype, DType::kI64);
    EXPECT_EQ(g.value(node.outputs[0]).dtype, DType::kI32);
  }
}

TEST(QnnPartition, SkipIndexCopyKeepsCacheUpdateOnCpu) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  auto report = partition(g, {{"skip_node_op_set", std::set<std::string>{"index_copy"}}});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(portable_ops(g), (std::multiset<std::string>{"cast", "cast", "index_copy", "index_copy"}));
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"cast", 2}, {"index_copy", 2}}));
  // rope/projections before the cache update, attention and the rest after it.
  EXPECT_EQ(report->partitions, 2);
  const auto d = delegated(g);
  for (NodeId id : {ids.embedding, ids.rms_norm, ids.q_proj, ids.k_proj, ids.v_proj, ids.rope_q, ids.rope_k,
                    ids.attention, ids.o_proj, ids.residual}) {
    EXPECT_TRUE(d.count(id)) << "node " << id;
  }
  EXPECT_FALSE(d.count(ids.k_update));
  EXPECT_FALSE(d.count(ids.v_update));
  // The cache updates still read the caller's buffers and write in place, with the i64
  // positions the portable kernel takes.
  for (const auto& node : g.nodes()) {
    if (node.op != "index_copy") continue;
    const auto& dst = g.value(node.inputs[0]);
    EXPECT_EQ(dst.input_kind, InputKind::kBuffer);
    EXPECT_EQ(g.value(node.outputs[0]).alias_of, dst.id);
    EXPECT_EQ(node.inputs[1], ids.positions);
  }
  EXPECT_TRUE(g.validate().ok());
}

TEST(QnnPartition, SkipMutableBufferKeepsCacheUpdateOnCpu) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  auto report = partition(g, {{"skip_mutable_buffer", true}});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"cast", 2}, {"index_copy", 2}}));
  for (const auto& node : report->nodes) {
    if (node.op == "index_copy") {
      EXPECT_EQ(node.reason, "skip_mutable_buffer");
    }
  }
}

TEST(QnnPartition, SkipNodeIdsStayPortable) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  auto report = partition(g, {{"skip_node_id_set", std::set<int64_t>{ids.rms_norm, ids.residual}}});
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(portable_ops(g), (std::multiset<std::string>{"add", "cast", "cast", "rms_norm"}));
  const auto d = delegated(g);
  EXPECT_FALSE(d.count(ids.rms_norm));
  EXPECT_FALSE(d.count(ids.residual));
  EXPECT_TRUE(d.count(ids.embedding));
  EXPECT_TRUE(d.count(ids.attention));
}

TEST(QnnPartition, Q8WeightLinearStaysPortable) {
  LayerIds ids;
  Graph g = decoder_layer(ids, {}, DType::kF32, /*o_proj_dtype=*/DType::kQ8);
  auto report = partition(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"cast", 2}, {"linear", 1}}));
  for (const auto& node : report->nodes) {
    if (node.id == ids.o_proj) {
      EXPECT_NE(node.reason.find("is q8"), std::string::npos) << node.reason;
    }
  }
  EXPECT_FALSE(delegated(g).count(ids.o_proj));
  EXPECT_TRUE(delegated(g).count(ids.q_proj));
}

TEST(QnnPartition, F16WeightsAreDelegatedBf16AreNot) {
  LayerIds ids;
  Graph f16 = decoder_layer(ids, {}, DType::kF16, DType::kF16);
  auto report = partition(f16);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->portable_ops, (std::map<std::string, int>{{"cast", 2}}));
  Graph bf16 = decoder_layer(ids, {}, DType::kBF16, DType::kBF16);
  report = partition(bf16);
  ASSERT_TRUE(report.ok());
  // Embedding, norm and the four projections stay portable (the embedding keeps reading the
  // i64 tokens, so only positions get a cast); the rest is delegated.
  EXPECT_EQ(report->portable_ops,
            (std::map<std::string, int>{{"cast", 1}, {"embedding", 1}, {"linear", 4}, {"rms_norm", 1}}));
}

TEST(QnnPartition, WorksThroughThePassManager) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  exporter::PassManager pm;
  pm.add_partitioner(std::make_shared<const exporter::Partitioner>(
      make_partitioner({{"skip_node_op_set", std::set<std::string>{"index_copy"}}})));
  auto report = pm.run(g);
  ASSERT_TRUE(report.ok()) << report.error().to_string();
  ASSERT_EQ(report->partitions.size(), 1u);
  EXPECT_EQ(report->partitions[0].partitions, 2);
  EXPECT_EQ(report->executed, (std::vector<std::string>{"transform:qnn:narrow_index_inputs", "partition:qnn"}));
}

TEST(QnnPayload, DelegatePayloadDescribesTheSubgraph) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  const Graph original = g;
  auto partitioner = make_partitioner({{"skip_node_op_set", std::set<std::string>{"index_copy"}},
                                       {"soc_model", std::string("SM8550")}});
  ASSERT_TRUE(make_narrow_index_inputs_pass(partitioner.options())->run(g).ok());
  ASSERT_TRUE(partitioner.partition(g).ok());
  ASSERT_EQ(g.delegates().size(), 2u);
  for (size_t di = 0; di < g.delegates().size(); ++di) {
    const auto& delegate = g.delegates()[di];
    EXPECT_EQ(delegate.compile_specs, partitioner.compile_specs());
    auto payload = parse_qnn_payload(delegate.payload);
    ASSERT_TRUE(payload.ok()) << payload.error().to_string();
    EXPECT_EQ(payload->compile_specs.at("soc_model"), "SM8550");
    EXPECT_EQ(payload->compile_specs.at("htp_arch"), "v73");
    ASSERT_EQ(payload->nodes.size(), delegate.original_nodes.size());
    for (size_t i = 0; i < payload->nodes.size(); ++i) {
      const auto& pn = payload->nodes[i];
      EXPECT_EQ(pn.id, delegate.original_nodes[i]);
      const exporter::Node* on = original.find_node(pn.id);
      ASSERT_NE(on, nullptr);
      EXPECT_EQ(pn.op, on->op);
      EXPECT_EQ(pn.attrs, on->attrs);
      ASSERT_EQ(pn.outputs.size(), on->outputs.size());
      for (size_t k = 0; k < pn.outputs.size(); ++k) {
        const auto* pv = payload->find_value(pn.outputs[k]);
        const auto& ov = original.value(on->outputs[k]);
        ASSERT_NE(pv, nullptr);
        EXPECT_EQ(pv->name, ov.name);
        EXPECT_EQ(pv->dtype, ov.dtype);
        EXPECT_EQ(pv->shape, ov.shape);
      }
    }
    // The delegate node's inputs line up with the payload's input order; parameters and
    // constants are references to the program constants wired to those inputs.
    const exporter::Node* node = nullptr;
    for (const auto& n : g.nodes())
      if (n.op == "delegate" && n.delegate == static_cast<int32_t>(di)) node = &n;
    ASSERT_NE(node, nullptr);
    ASSERT_EQ(payload->inputs.size(), node->inputs.size());
    for (size_t i = 0; i < node->inputs.size(); ++i) {
      const auto* pv = payload->find_value(payload->inputs[i]);
      ASSERT_NE(pv, nullptr);
      const auto& gv = g.value(node->inputs[i]);
      EXPECT_EQ(pv->name, gv.name);
      EXPECT_EQ(pv->input_index, static_cast<int32_t>(i));
      if (gv.input_kind == InputKind::kParameter || gv.input_kind == InputKind::kConstant) {
        EXPECT_FALSE(pv->embedded) << gv.name;
        EXPECT_EQ(pv->kind, gv.input_kind == InputKind::kParameter ? QnnValueKind::kParameter : QnnValueKind::kConstant);
        EXPECT_TRUE(payload->data_of(*pv).empty());
      } else {
        EXPECT_FALSE(pv->embedded);
        EXPECT_EQ(pv->kind, QnnValueKind::kInput);
      }
    }
    ASSERT_EQ(payload->outputs.size(), node->outputs.size());
    for (size_t i = 0; i < node->outputs.size(); ++i) {
      const auto* pv = payload->find_value(payload->outputs[i]);
      EXPECT_EQ(pv->output_index, static_cast<int32_t>(i));
      EXPECT_EQ(pv->name, g.value(node->outputs[i]).name);
    }
  }
}

TEST(QnnPayload, ParserRejectsDamage) {
  LayerIds ids;
  Graph g = decoder_layer(ids);
  ASSERT_TRUE(partition(g, {{"embed_parameters", true}}).ok());
  const std::vector<uint8_t> good = g.delegates()[0].payload;
  ASSERT_TRUE(parse_qnn_payload(good).ok());

  EXPECT_FALSE(parse_qnn_payload(std::span<const uint8_t>(good.data(), 20)).ok()) << "truncated";
  auto bad_magic = good;
  bad_magic[0] = 'X';
  EXPECT_FALSE(parse_qnn_payload(bad_magic).ok());
  auto bad_version = good;
  bad_version[8] = 9;
  EXPECT_EQ(parse_qnn_payload(bad_version).error().code(), ErrorCode::kUnsupported);
  auto short_blob = good;
  short_blob.resize(good.size() - 1);
  EXPECT_EQ(parse_qnn_payload(short_blob).error().code(), ErrorCode::kOutOfRange);
  auto big_header = good;
  big_header[16 + 7] = 0x7f;
  EXPECT_FALSE(parse_qnn_payload(big_header).ok());
  auto bad_json = good;
  bad_json[kQnnPayloadFixedHeader] = '[';
  bad_json[kQnnPayloadFixedHeader + 1] = '[';
  EXPECT_EQ(parse_qnn_payload(bad_json).error().code(), ErrorCode::kCorrupt);
  // Flip the header text so a data size lies: the byte count no longer matches the dtype/shape.
  std::string header(reinterpret_cast<const char*>(good.data() + kQnnPayloadFixedHeader),
                     good[16] | (good[17] << 8));
  const size_t at = header.find("\"nbytes\":");
  ASSERT_NE(at, std::string::npos);
  auto bad_bytes = good;
  bad_bytes[kQnnPayloadFixedHeader + at + 9] = bad_bytes[kQnnPayloadFixedHeader + at + 9] == '1' ? '2' : '1';
  auto parsed = parse_qnn_payload(bad_bytes);
  EXPECT_FALSE(parsed.ok());
}

TEST(QnnPayload, PreprocessRejectsForeignSpecsAndUnsupportedNodes) {
  LayerIds ids;
  Graph g = decoder_layer(ids, {}, DType::kF32, DType::kF32, DType::kI32);
  QnnBackendExporter exporter;
  auto specs = QnnCompileSpecBuilder().build();
  ASSERT_TRUE(specs.ok());
  auto payload = exporter.preprocess(g, *specs);
  ASSERT_TRUE(payload.ok()) << payload.error().to_string();
  EXPECT_TRUE(parse_qnn_payload(*payload).ok());
  EXPECT_FALSE(exporter.preprocess(g, {{"threads", {'4'}}}).ok());

  Graph bad;
  auto x = bad.add_input("x", DType::kF32, {4}, InputKind::kUser);
  bad.mark_output(bad.add_op("argmax", {x}, "i", DType::kI64, {}));
  auto rejected = exporter.preprocess(bad, *specs);
  ASSERT_FALSE(rejected.ok());
  EXPECT_NE(rejected.error().message().find("argmax"), std::string::npos);

  // A context binary is not what Kestrel writes.
  auto binary_specs = QnnCompileSpecBuilder().is_from_context_binary(true).build();
  ASSERT_TRUE(binary_specs.ok());
  auto binary = exporter.preprocess(g, *binary_specs);
  ASSERT_FALSE(binary.ok());
  EXPECT_NE(binary.error().message().find("context binaries"), std::string::npos);
}

TEST(QnnPayload, ReferencedParametersStayOutOfThePayload) {
  LayerIds ids;
  Graph embedded = decoder_layer(ids);
  Graph referenced = decoder_layer(ids);
  ASSERT_TRUE(partition(embedded, {{"embed_parameters", true}}).ok());
  ASSERT_TRUE(partition(referenced).ok());
  const auto& big = embedded.delegates()[0].payload;
  const auto& small = referenced.delegates()[0].payload;
  EXPECT_LT(small.size() + 10000, big.size());
  auto payload = parse_qnn_payload(small);
  ASSERT_TRUE(payload.ok()) << payload.error().to_string();
  EXPECT_TRUE(payload->blob.empty());
  const auto* wq = payload->find_value(payload->inputs[0]);
  ASSERT_NE(wq, nullptr);
  size_t parameters = 0;
  for (int32_t id : payload->inputs) {
    const auto* v = payload->find_value(id);
    if (v->kind == QnnValueKind::kParameter || v->kind == QnnValueKind::kConstant) {
      ++parameters;
      EXPECT_FALSE(v->embedded) << v->name;
      EXPECT_GE(v->input_index, 0);
    }
  }
  EXPECT_EQ(parameters, 8u) << "six weights and two rope tables, all delegate inputs";
}

TEST(QnnPayload, ParameterWithoutBytesIsAReference) {
  Graph g;
  auto x = g.add_input("x", DType::kF32, {1, 2, 64}, InputKind::kUser);
  auto w = g.add_input("w", DType::kF32, {8, 64}, InputKind::kParameter);  // no bytes: lifted elsewhere
  g.mark_output(g.add_op("linear", {x, w}, "y", DType::kF32, {1, 2, 8}));
  auto specs = QnnCompileSpecBuilder().build();
  auto bytes = serialize_qnn_payload(g, *specs);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto payload = parse_qnn_payload(*bytes);
  ASSERT_TRUE(payload.ok()) << payload.error().to_string();
  const auto* pw = payload->find_value(w);
  ASSERT_NE(pw, nullptr);
  EXPECT_FALSE(pw->embedded);
  EXPECT_EQ(pw->kind, QnnValueKind::kParameter);
  EXPECT_EQ(pw->input_index, 1);
  EXPECT_TRUE(payload->blob.empty());
}

}  // namespace
}  // namespace kestrel::qnn
