// Small hand-built graphs shaped like one decoder layer, for the QNN partitioner tests.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/export/graph.h"

namespace kestrel::qnn::testing {

struct LayerDims {
  int64_t vocab = 32, hidden = 64, heads = 4, kv_heads = 2, head_dim = 16, tokens = 4, context = 16;
};

struct LayerIds {
  exporter::ValueId tokens, positions, k_cache, v_cache;
  exporter::ValueId embed, norm_w, wq, wk, wv, wo, cos, sin;
  exporter::NodeId embedding, rms_norm, q_proj, k_proj, v_proj, rope_q, rope_k, k_update, v_update,
      attention, o_proj, residual;
  exporter::ValueId hidden_out, new_k, new_v;
};

inline std::shared_ptr<const exporter::ConstantData> filled(DType dtype, const std::vector<int64_t>& shape,
                                                            uint8_t seed) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const size_t bytes = dtype_storage_bytes(dtype, numel, shape.back()).value();
  std::vector<uint8_t> data(bytes);
  for (size_t i = 0; i < bytes; ++i) data[i] = static_cast<uint8_t>(seed + i * 7);
  return exporter::ConstantData::owned(std::move(data));
}

inline exporter::NodeId producer_of(const exporter::Graph& g, exporter::ValueId v) { return g.value(v).producer; }

// embedding -> rms_norm -> q/k/v linear -> reshape/transpose -> rope(q, k) ->
// index_copy into the k/v caches (kBuffer inputs, in place) -> attention -> transpose/reshape
// -> o linear -> residual add. Outputs: hidden, new k, new v (the hf_static shape).
// `index_dtype`: of tokens and positions (i64 as exported; i32 as after narrow_index_inputs).
inline exporter::Graph decoder_layer(LayerIds& ids, const LayerDims& d = {}, DType weight_dtype = DType::kF32,
                                     DType o_proj_dtype = DType::kF32, DType index_dtype = DType::kI64) {
  using exporter::InputKind;
  exporter::Graph g;
  const int64_t T = d.tokens, D = d.hidden, Hq = d.heads, Hkv = d.kv_heads, Dh = d.head_dim, C = d.context;
  ids.tokens = g.add_input("tokens", index_dtype, {1, T}, InputKind::kUser);
  ids.positions = g.add_input("positions", index_dtype, {T}, InputKind::kUser);
  ids.k_cache = g.add_input("k_cache", DType::kF32, {1, Hkv, C, Dh}, InputKind::kBuffer);
  ids.v_cache = g.add_input("v_cache", DType::kF32, {1, Hkv, C, Dh}, InputKind::kBuffer);
  auto param = [&](const char* name, DType dt, std::vector<int64_t> shape, uint8_t seed) {
    auto data = filled(dt, shape, seed);
    return g.add_input(name, dt, std::move(shape), InputKind::kParameter, data);
  };
  ids.embed = param("embed", weight_dtype, {d.vocab, D}, 1);
  ids.norm_w = param("norm_w", weight_dtype, {D}, 2);
  ids.wq = param("wq", weight_dtype, {Hq * Dh, D}, 3);
  ids.wk = param("wk", weight_dtype, {Hkv * Dh, D}, 4);
  ids.wv = param("wv", weight_dtype, {Hkv * Dh, D}, 5);
  ids.wo = param("wo", o_proj_dtype, {D, Hq * Dh}, 6);
  ids.cos = g.add_input("rope_cos", DType::kF32, {C, Dh / 2}, InputKind::kConstant, filled(DType::kF32, {C, Dh / 2}, 7));
  ids.sin = g.add_input("rope_sin", DType::kF32, {C, Dh / 2}, InputKind::kConstant, filled(DType::kF32, {C, Dh / 2}, 8));

  auto h = g.add_op("embedding", {ids.embed, ids.tokens}, "h", DType::kF32, {1, T, D});
  ids.embedding = producer_of(g, h);
  auto n = g.add_op("rms_norm", {h, ids.norm_w}, "n", DType::kF32, {1, T, D}, {{"eps", 1e-5}});
  ids.rms_norm = producer_of(g, n);
  auto heads = [&](exporter::ValueId w, int64_t H, const std::string& name, exporter::NodeId& proj) {
    auto p = g.add_op("linear", {n, w}, name, DType::kF32, {1, T, H * Dh});
    proj = producer_of(g, p);
    auto r = g.add_op("reshape", {p}, name + "_4d", DType::kF32, {1, T, H, Dh},
                      {{"shape", std::vector<int64_t>{1, T, H, Dh}}});
    g.value(r).alias_of = p;
    return g.add_op("transpose", {r}, name + "_t", DType::kF32, {1, H, T, Dh},
                    {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  };
  auto q = heads(ids.wq, Hq, "q", ids.q_proj);
  auto k = heads(ids.wk, Hkv, "k", ids.k_proj);
  auto v = heads(ids.wv, Hkv, "v", ids.v_proj);
  auto qr = g.add_op("rope", {q, ids.positions, ids.cos, ids.sin}, "q_rot", DType::kF32, {1, Hq, T, Dh},
                     {{"style", std::string("half")}});
  ids.rope_q = producer_of(g, qr);
  auto kr = g.add_op("rope", {k, ids.positions, ids.cos, ids.sin}, "k_rot", DType::kF32, {1, Hkv, T, Dh},
                     {{"style", std::string("half")}});
  ids.rope_k = producer_of(g, kr);
  auto kc = g.add_op("index_copy", {ids.k_cache, ids.positions, kr}, "k_all", DType::kF32, {1, Hkv, C, Dh},
                     {{"axis", int64_t{2}}});
  g.value(kc).alias_of = ids.k_cache;
  ids.k_update = producer_of(g, kc);
  auto vc = g.add_op("index_copy", {ids.v_cache, ids.positions, v}, "v_all", DType::kF32, {1, Hkv, C, Dh},
                     {{"axis", int64_t{2}}});
  g.value(vc).alias_of = ids.v_cache;
  ids.v_update = producer_of(g, vc);
  auto a = g.add_op("attention", {qr, kc, vc, ids.positions}, "attn", DType::kF32, {1, Hq, T, Dh},
                    {{"scale", 0.25}});
  ids.attention = producer_of(g, a);
  auto at = g.add_op("transpose", {a}, "attn_t", DType::kF32, {1, T, Hq, Dh},
                     {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  auto ar = g.add_op("reshape", {at}, "attn_flat", DType::kF32, {1, T, Hq * Dh},
                     {{"shape", std::vector<int64_t>{1, T, Hq * Dh}}});
  g.value(ar).alias_of = at;
  auto o = g.add_op("linear", {ar, ids.wo}, "o", DType::kF32, {1, T, D});
  ids.o_proj = producer_of(g, o);
  auto out = g.add_op("add", {h, o}, "hidden_out", DType::kF32, {1, T, D});
  ids.residual = producer_of(g, out);
  ids.hidden_out = out;
  ids.new_k = kr;
  ids.new_v = v;
  g.mark_output(out);
  g.mark_output(kr);
  g.mark_output(v);
  return g;
}

}  // namespace kestrel::qnn::testing
