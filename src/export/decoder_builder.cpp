#include "kestrel/export/decoder_builder.h"

#include <cmath>
#include <cstring>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/architecture.h"
#include "kestrel/export/rope_tables.h"

namespace kestrel::exporter {

namespace {

// Rounds a value to a float dtype and back (the dtype a scale is cast to).
float round_to(float value, DType dtype) {
  if (dtype == DType::kF16) return f16_to_f32(f32_to_f16(value));
  if (dtype == DType::kBF16) return bf16_to_f32(f32_to_bf16(value));
  return value;
}

// Adds graph nodes for one decoder; keeps the shape bookkeeping in one place.
class DecoderGraphBuilder {
 public:
  DecoderGraphBuilder(WeightCache& weights, const DecoderOptions& options, const Architecture& architecture)
      : weights_(weights),
        options_(options),
        config_(weights.checkpoint().config()),
        names_(architecture.names),
        features_(architecture.features) {}

  Result<Graph> build() {
    const int64_t T = options_.step, C = options_.max_context;
    const int64_t D = config_.hidden_size, Dh = config_.head_dim;
    const int64_t Hq = config_.num_heads, Hkv = config_.num_kv_heads;
    if (T < 1) return make_error(ErrorCode::kInvalidArgument, "step must be >= 1, got {}", T);
    if (C < T) return make_error(ErrorCode::kInvalidArgument, "max_context ({}) is smaller than the step ({})", C, T);
    if (options_.logits != "last" && options_.logits != "all")
      return make_error(ErrorCode::kInvalidArgument, "logits mode must be 'last' or 'all', got '{}'", options_.logits);
    if (static_cast<int64_t>(config_.layers.size()) != config_.num_layers)
      return make_error(ErrorCode::kInternal, "config has {} layer specs for {} layers", config_.layers.size(),
                        config_.num_layers);

    const ValueId tokens = graph_.add_input("tokens", DType::kI64, {1, T}, InputKind::kUser);
    positions_ = graph_.add_input("positions", DType::kI64, {T}, InputKind::kUser);
    std::vector<std::pair<ValueId, ValueId>> caches;
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      const DType cache = options_.cache_dtype;
      const ValueId k = graph_.add_input(fmt::format("k_cache_{}", l), cache, {1, Hkv, C, Dh}, InputKind::kBuffer);
      const ValueId v = graph_.add_input(fmt::format("v_cache_{}", l), cache, {1, Hkv, C, Dh}, InputKind::kBuffer);
      caches.emplace_back(k, v);
    }

    KESTREL_ASSIGN_OR_RETURN(const ValueId embed, matrix(names_.embedding));
    ValueId x = graph_.add_op("embedding", {embed, tokens}, "embeddings", DType::kF32, {1, T, D});
    if (features_.embedding_scale) {
      // transformers multiplies by sqrt(hidden_size) cast to the embedding's dtype.
      KESTREL_ASSIGN_OR_RETURN(CheckpointTensor table, weights_.checkpoint().tensor(names_.embedding));
      const float scale = round_to(static_cast<float>(std::sqrt(static_cast<double>(D))), table.dtype);
      const ValueId factor = constant("embedding_scale", {D}, std::vector<float>(static_cast<size_t>(D), scale));
      x = graph_.add_op("mul", {x, factor}, "embeddings_scaled", DType::kF32, {1, T, D});
    }

    std::vector<ValueId> new_kv;
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      const LayerSpec& spec = config_.layers[l];
      const std::string n = fmt::format("l{}.", l);
      KESTREL_ASSIGN_OR_RETURN(const ValueId attn_norm, norm(names_.layer(l, names_.attn_norm)));
      const ValueId h = rms_norm(x, attn_norm, n + "attn_norm", {1, T, D});

      // Projections: plain q/k/v, or the row blocks of a fused qkv.
      const int64_t q_dim = Hq * Dh, kv_dim = Hkv * Dh;
      ValueId q, k, v;
      if (!names_.qkv.empty()) {
        const std::string fused = names_.layer(l, names_.qkv);
        KESTREL_ASSIGN_OR_RETURN(q, linear_rows(h, fused, 0, q_dim, n + "q"));
        KESTREL_ASSIGN_OR_RETURN(k, linear_rows(h, fused, q_dim, kv_dim, n + "k"));
        KESTREL_ASSIGN_OR_RETURN(v, linear_rows(h, fused, q_dim + kv_dim, kv_dim, n + "v"));
      } else {
        KESTREL_ASSIGN_OR_RETURN(q, linear(h, names_.layer(l, names_.q), n + "q", {1, T, q_dim}));
        KESTREL_ASSIGN_OR_RETURN(k, linear(h, names_.layer(l, names_.k), n + "k", {1, T, kv_dim}));
        KESTREL_ASSIGN_OR_RETURN(v, linear(h, names_.layer(l, names_.v), n + "v", {1, T, kv_dim}));
      }
      std::optional<ValueId> q_norm, k_norm;
      if (features_.qk_norm) {
        KESTREL_ASSIGN_OR_RETURN(q_norm, norm(names_.layer(l, names_.q_norm)));
        KESTREL_ASSIGN_OR_RETURN(k_norm, norm(names_.layer(l, names_.k_norm)));
      }
      const ValueId qh = to_heads(q, n + "q", Hq, q_norm, spec.rope ? "" : n + "q_heads");
      // The new slices are named k_new/v_new where they reach the cache's element type.
      const bool narrow = options_.cache_dtype != DType::kF32;
      const std::string k_new = fmt::format("k_new_{}", l), v_new = fmt::format("v_new_{}", l);
      const ValueId kh = to_heads(k, n + "k", Hkv, k_norm, spec.rope || narrow ? "" : k_new);
      ValueId vh = to_heads(v, n + "v", Hkv, std::nullopt, narrow ? "" : v_new);
      ValueId qr = qh, kr = kh;
      if (spec.rope) {
        const RopeKind kind = spec.sliding && config_.local_rope_theta > 0 ? RopeKind::kLocal : RopeKind::kGlobal;
        KESTREL_ASSIGN_OR_RETURN(const auto table, rope_table(kind));
        program::Attrs rope_attrs{{"style", config_.rope_style}};
        if (config_.rotary_dim > 0 && config_.rotary_dim != Dh) rope_attrs["rotary_dim"] = config_.rotary_dim;
        qr = graph_.add_op("rope", {qh, positions_, table.first, table.second}, n + "q_rope", DType::kF32,
                           {1, Hq, T, Dh}, rope_attrs);
        kr = graph_.add_op("rope", {kh, positions_, table.first, table.second}, narrow ? n + "k_rope" : k_new,
                           DType::kF32, {1, Hkv, T, Dh}, rope_attrs);
      }
      if (narrow) {
        kr = cast(kr, k_new, options_.cache_dtype);
        vh = cast(vh, v_new, options_.cache_dtype);
      }
      new_kv.push_back(kr);
      new_kv.push_back(vh);
      // The cache update writes the new slices into the cache buffer in place (an alias of the
      // cache input); the runner writes the same slices from the k/v outputs.
      const ValueId k_full = cache_update(caches[l].first, kr, n + "k_cache_updated");
      const ValueId v_full = cache_update(caches[l].second, vh, n + "v_cache_updated");
      const double scale =
          config_.attention_scale > 0 ? config_.attention_scale : 1.0 / std::sqrt(static_cast<double>(Dh));
      program::Attrs attention_attrs{{"scale", scale}};
      // A window covering the whole cache changes nothing; leave the attribute out then.
      if (spec.sliding && config_.sliding_window < C) attention_attrs["window"] = config_.sliding_window;
      const ValueId attn = graph_.add_op("attention", {qr, k_full, v_full, positions_}, n + "attn", DType::kF32,
                                         {1, Hq, T, Dh}, attention_attrs);
      const ValueId merged = from_heads(attn, n + "attn", Hq);
      KESTREL_ASSIGN_OR_RETURN(ValueId o, linear(merged, names_.layer(l, names_.o), n + "o", {1, T, D}));
      if (features_.sandwich_norms) {
        KESTREL_ASSIGN_OR_RETURN(const ValueId post, norm(names_.layer(l, names_.post_attn_norm)));
        o = rms_norm(o, post, n + "post_attn_norm", {1, T, D});
      }
      x = graph_.add_op("add", {x, o}, n + "residual_attn", DType::kF32, {1, T, D});

      KESTREL_ASSIGN_OR_RETURN(const ValueId mlp_norm, norm(names_.layer(l, names_.ffn_norm)));
      const ValueId h2 = rms_norm(x, mlp_norm, n + "mlp_norm", {1, T, D});
      const int64_t F = config_.intermediate_size;
      ValueId gate, up;
      if (!names_.gate_up.empty()) {
        const std::string fused = names_.layer(l, names_.gate_up);
        KESTREL_ASSIGN_OR_RETURN(gate, linear_rows(h2, fused, 0, F, n + "gate"));
        KESTREL_ASSIGN_OR_RETURN(up, linear_rows(h2, fused, F, F, n + "up"));
      } else {
        KESTREL_ASSIGN_OR_RETURN(gate, linear(h2, names_.layer(l, names_.gate), n + "gate", {1, T, F}));
        KESTREL_ASSIGN_OR_RETURN(up, linear(h2, names_.layer(l, names_.up), n + "up", {1, T, F}));
      }
      const ValueId act = activation(gate, n + "gate_act", {1, T, F});
      const ValueId prod = graph_.add_op("mul", {act, up}, n + "gated", DType::kF32, {1, T, F});
      KESTREL_ASSIGN_OR_RETURN(ValueId down, linear(prod, names_.layer(l, names_.down), n + "down", {1, T, D}));
      if (features_.sandwich_norms) {
        KESTREL_ASSIGN_OR_RETURN(const ValueId post, norm(names_.layer(l, names_.post_ffn_norm)));
        down = rms_norm(down, post, n + "post_mlp_norm", {1, T, D});
      }
      x = graph_.add_op("add", {x, down}, n + "residual_mlp", DType::kF32, {1, T, D});
    }

    KESTREL_ASSIGN_OR_RETURN(const ValueId final_norm, norm(names_.final_norm));
    ValueId out = rms_norm(x, final_norm, "final_norm", {1, T, D});
    int64_t logit_rows = T;
    if (options_.logits == "last" && T > 1) {
      out = graph_.add_op("slice", {out}, "last_hidden", DType::kF32, {1, 1, D},
                          {{"axis", int64_t{1}}, {"start", T - 1}, {"end", T}});
      logit_rows = 1;
    }
    const std::string& head = config_.tie_word_embeddings ? names_.embedding : names_.lm_head;
    KESTREL_ASSIGN_OR_RETURN(const ValueId head_weight, matrix(head));
    const ValueId logits =
        graph_.add_op("linear", {out, head_weight}, "logits", DType::kF32, {1, logit_rows, config_.vocab_size});
    graph_.mark_output(logits);
    for (ValueId value : new_kv) graph_.mark_output(value);
    KESTREL_RETURN_IF_ERROR(graph_.validate());
    return std::move(graph_);
  }

 private:
  Result<ValueId> parameter(const std::string& name, DType dtype) {
    if (auto it = parameters_.find(name); it != parameters_.end()) return it->second;
    KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, weights_.checkpoint().tensor(name));
    KESTREL_ASSIGN_OR_RETURN(auto data, weights_.get(name, dtype));
    const ValueId id = graph_.add_input(name, dtype, tensor.shape, InputKind::kParameter, data);
    parameters_[name] = id;
    return id;
  }
  Result<ValueId> matrix(const std::string& name) { return parameter(name, weights_.matrix_dtype()); }
  Result<ValueId> vector(const std::string& name) { return parameter(name, DType::kF32); }

  // An RMSNorm weight, folded to 1 + weight for (1 + w) norms.
  Result<ValueId> norm(const std::string& name) {
    if (auto it = parameters_.find(name); it != parameters_.end()) return it->second;
    KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, weights_.checkpoint().tensor(name));
    KESTREL_ASSIGN_OR_RETURN(auto data, weights_.get_norm(name, features_.norm_plus_one));
    const ValueId id = graph_.add_input(name, DType::kF32, tensor.shape, InputKind::kParameter, data);
    parameters_[name] = id;
    return id;
  }

  ValueId constant(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return graph_.add_input(name, DType::kF32, std::move(shape), InputKind::kConstant,
                            ConstantData::owned(std::move(bytes)));
  }

  // The cos/sin constants of one rope kind, made once per graph.
  Result<std::pair<ValueId, ValueId>> rope_table(RopeKind kind) {
    if (auto it = rope_tables_.find(kind); it != rope_tables_.end()) return it->second;
    const int64_t C = options_.max_context;
    KESTREL_ASSIGN_OR_RETURN(auto tables, make_rope_tables(config_, C, kind));
    const int64_t half = static_cast<int64_t>(tables.cos.size()) / C;
    const std::string prefix = kind == RopeKind::kLocal ? "rope_local_" : "rope_";
    const std::pair<ValueId, ValueId> ids{constant(prefix + "cos", {C, half}, tables.cos),
                                          constant(prefix + "sin", {C, half}, tables.sin)};
    rope_tables_[kind] = ids;
    return ids;
  }

  ValueId rms_norm(ValueId x, ValueId weight, const std::string& name, std::vector<int64_t> shape) {
    return graph_.add_op("rms_norm", {x, weight}, name, DType::kF32, std::move(shape),
                         {{"eps", config_.rms_norm_eps}});
  }

  ValueId activation(ValueId x, const std::string& name, std::vector<int64_t> shape) {
    if (config_.hidden_act == "silu") return graph_.add_op("silu", {x}, name, DType::kF32, std::move(shape));
    const std::string approximate = config_.hidden_act == "gelu_tanh" ? "tanh" : "none";
    return graph_.add_op("gelu", {x}, name, DType::kF32, std::move(shape), {{"approximate", approximate}});
  }

  Result<ValueId> linear(ValueId x, const std::string& prefix, const std::string& name, std::vector<int64_t> shape) {
    KESTREL_ASSIGN_OR_RETURN(const ValueId weight, matrix(prefix + ".weight"));
    std::vector<ValueId> inputs{x, weight};
    if (weights_.checkpoint().has_tensor(prefix + ".bias")) {
      KESTREL_ASSIGN_OR_RETURN(const ValueId bias, vector(prefix + ".bias"));
      inputs.push_back(bias);
    }
    return graph_.add_op("linear", std::move(inputs), name, DType::kF32, std::move(shape));
  }

  // A linear over rows [begin, begin + count) of a fused projection, which becomes a plain
  // weight constant of its own ("<fused>.weight[begin:end]").
  Result<ValueId> linear_rows(ValueId x, const std::string& prefix, int64_t begin, int64_t count,
                              const std::string& name) {
    std::vector<ValueId> inputs{x};
    for (const char* part : {".weight", ".bias"}) {
      const std::string tensor = prefix + part;
      if (std::string(part) == ".bias" && !weights_.checkpoint().has_tensor(tensor)) continue;
      const std::string param = fmt::format("{}[{}:{}]", tensor, begin, begin + count);
      if (auto it = parameters_.find(param); it != parameters_.end()) {
        inputs.push_back(it->second);
        continue;
      }
      KESTREL_ASSIGN_OR_RETURN(CheckpointTensor whole, weights_.checkpoint().tensor(tensor));
      const DType dtype = whole.shape.size() == 2 ? weights_.matrix_dtype() : DType::kF32;
      KESTREL_ASSIGN_OR_RETURN(auto data, weights_.get_rows(tensor, begin, count, dtype));
      std::vector<int64_t> shape = whole.shape;
      shape[0] = count;
      const ValueId id = graph_.add_input(param, dtype, shape, InputKind::kParameter, data);
      parameters_[param] = id;
      inputs.push_back(id);
    }
    return graph_.add_op("linear", std::move(inputs), name, DType::kF32, {1, options_.step, count});
  }

  // [1, T, H*Dh] -> [1, H, T, Dh]: a zero-copy reshape, an optional per-head RMSNorm, a transpose.
  ValueId to_heads(ValueId x, const std::string& name, int64_t heads, std::optional<ValueId> head_norm,
                   std::string out_name) {
    const int64_t T = options_.step, Dh = config_.head_dim;
    ValueId split = reshape(x, name + "_split", {1, T, heads, Dh});
    if (head_norm) split = rms_norm(split, *head_norm, name + "_norm", {1, T, heads, Dh});
    return graph_.add_op("transpose", {split}, out_name.empty() ? name + "_heads" : out_name, DType::kF32,
                         {1, heads, T, Dh}, {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
  }

  // [1, H, T, Dh] -> [1, T, H*Dh].
  ValueId from_heads(ValueId x, const std::string& name, int64_t heads) {
    const int64_t T = options_.step, Dh = config_.head_dim;
    const ValueId tokens_first = graph_.add_op("transpose", {x}, name + "_tokens", DType::kF32, {1, T, heads, Dh},
                                               {{"perm", std::vector<int64_t>{0, 2, 1, 3}}});
    return reshape(tokens_first, name + "_merged", {1, T, heads * Dh});
  }

  ValueId reshape(ValueId x, const std::string& name, std::vector<int64_t> shape) {
    const ValueId out = graph_.add_op("reshape", {x}, name, DType::kF32, shape, {{"shape", shape}});
    graph_.value(out).alias_of = x;
    return out;
  }

  ValueId cast(ValueId x, const std::string& name, DType dtype) {
    return graph_.add_op("cast", {x}, name, dtype, graph_.value(x).shape, {{"dtype", std::string(dtype_name(dtype))}});
  }

  ValueId cache_update(ValueId cache, ValueId slice, const std::string& name) {
    const ValueId out = graph_.add_op("index_copy", {cache, positions_, slice}, name, graph_.value(cache).dtype,
                                      graph_.value(cache).shape, {{"axis", int64_t{2}}});
    graph_.value(out).alias_of = cache;
    return out;
  }

  WeightCache& weights_;
  const DecoderOptions& options_;
  const ModelConfig& config_;
  const TensorNames& names_;
  const DecoderFeatures& features_;
  Graph graph_;
  ValueId positions_{};
  std::map<std::string, ValueId> parameters_;
  std::map<RopeKind, std::pair<ValueId, ValueId>> rope_tables_;
};

}  // namespace

Result<Graph> build_decoder_graph(WeightCache& weights, const DecoderOptions& options) {
  const ModelConfig& config = weights.checkpoint().config();
  const Architecture* architecture = find_architecture(config.architecture);
  if (architecture == nullptr)
    return make_error(ErrorCode::kUnsupported, "architecture '{}' is not in the architecture table",
                      config.architecture);
  return DecoderGraphBuilder(weights, options, *architecture).build();
}

}  // namespace kestrel::exporter
