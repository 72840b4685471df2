#include "kestrel/export/decoder_builder.h"

#include <cmath>
#include <cstring>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/rope_tables.h"
#include "kestrel/kernels/quantize.h"

namespace kestrel::exporter {

Result<std::shared_ptr<const ConstantData>> WeightCache::get(const std::string& name, DType dtype) {
  auto key = std::make_pair(name, dtype);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, checkpoint_.tensor(name));
  std::shared_ptr<const ConstantData> data;
  if (tensor.dtype == dtype) {
    auto view = std::make_shared<ConstantData>();
    view->bytes = tensor.bytes;
    view->keepalive = checkpoint_.keepalive();
    data = std::move(view);
  } else if (dtype == DType::kQ8) {
    // q8 matrices: widened to f32, then quantized row by row ([rows, cols] = shape).
    if (tensor.shape.size() != 2)
      return make_error(ErrorCode::kInvalidArgument, "converting '{}': q8 needs a matrix, the tensor has rank {}",
                        name, tensor.shape.size());
    const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
    if (cols % kQ8BlockSize != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "converting '{}' to q8: {} columns are not a multiple of the q8 block size {}", name, cols,
                        kQ8BlockSize);
    auto widened = convert_tensor(tensor, DType::kF32);
    if (!widened.ok()) return widened.error().with_context(fmt::format("converting '{}'", name));
    std::vector<float> values(widened->size() / sizeof(float));
    std::memcpy(values.data(), widened->data(), widened->size());
    std::vector<uint8_t> quantized(static_cast<size_t>(rows) * kernels::q8_row_bytes(cols));
    const Status status = kernels::quantize_q8(values.data(), rows, cols, quantized.data());
    if (!status.ok()) return status.error().with_context(fmt::format("converting '{}' to q8", name));
    data = ConstantData::owned(std::move(quantized));
  } else {
    auto converted = convert_tensor(tensor, dtype);
    if (!converted.ok()) return converted.error().with_context(fmt::format("converting '{}'", name));
    data = ConstantData::owned(std::move(converted).value());
  }
  cache_.emplace(key, data);
  return data;
}

namespace {

// Adds graph nodes for one decoder; keeps the shape bookkeeping in one place.
class DecoderGraphBuilder {
 public:
  DecoderGraphBuilder(WeightCache& weights, const DecoderOptions& options)
      : weights_(weights), options_(options), config_(weights.checkpoint().config()) {}

  Result<Graph> build() {
    const int64_t T = options_.step, C = options_.max_context;
    const int64_t D = config_.hidden_size, Dh = config_.head_dim;
    const int64_t Hq = config_.num_heads, Hkv = config_.num_kv_heads;
    if (T < 1) return make_error(ErrorCode::kInvalidArgument, "step must be >= 1, got {}", T);
    if (C < T) return make_error(ErrorCode::kInvalidArgument, "max_context ({}) is smaller than the step ({})", C, T);
    if (options_.logits != "last" && options_.logits != "all")
      return make_error(ErrorCode::kInvalidArgument, "logits mode must be 'last' or 'all', got '{}'", options_.logits);

    const ValueId tokens = graph_.add_input("tokens", DType::kI64, {1, T}, InputKind::kUser);
    const ValueId positions = graph_.add_input("positions", DType::kI64, {T}, InputKind::kUser);
    std::vector<std::pair<ValueId, ValueId>> caches;
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      const ValueId k = graph_.add_input(fmt::format("k_cache_{}", l), DType::kF32, {1, Hkv, C, Dh}, InputKind::kBuffer);
      const ValueId v = graph_.add_input(fmt::format("v_cache_{}", l), DType::kF32, {1, Hkv, C, Dh}, InputKind::kBuffer);
      caches.emplace_back(k, v);
    }
    KESTREL_ASSIGN_OR_RETURN(auto tables, make_rope_tables(config_, C));
    const ValueId rope_cos = constant("rope_cos", {C, Dh / 2}, tables.cos);
    const ValueId rope_sin = constant("rope_sin", {C, Dh / 2}, tables.sin);

    KESTREL_ASSIGN_OR_RETURN(const ValueId embed, matrix("model.embed_tokens.weight"));
    ValueId x = graph_.add_op("embedding", {embed, tokens}, "embeddings", DType::kF32, {1, T, D});

    std::vector<ValueId> new_kv;
    for (int64_t l = 0; l < config_.num_layers; ++l) {
      const std::string p = fmt::format("model.layers.{}.", l);
      const std::string n = fmt::format("l{}.", l);
      KESTREL_ASSIGN_OR_RETURN(const ValueId attn_norm, vector(p + "input_layernorm.weight"));
      const ValueId h = rms_norm(x, attn_norm, n + "attn_norm", {1, T, D});
      KESTREL_ASSIGN_OR_RETURN(const ValueId q, linear(h, p + "self_attn.q_proj", n + "q", {1, T, Hq * Dh}));
      KESTREL_ASSIGN_OR_RETURN(const ValueId k, linear(h, p + "self_attn.k_proj", n + "k", {1, T, Hkv * Dh}));
      KESTREL_ASSIGN_OR_RETURN(const ValueId v, linear(h, p + "self_attn.v_proj", n + "v", {1, T, Hkv * Dh}));
      const ValueId qh = to_heads(q, n + "q", Hq);
      const ValueId kh = to_heads(k, n + "k", Hkv);
      const ValueId vh = to_heads(v, n + "v", Hkv, fmt::format("v_new_{}", l));
      const program::Attrs rope_attrs{{"style", config_.rope_style}};
      const ValueId qr = graph_.add_op("rope", {qh, positions, rope_cos, rope_sin}, n + "q_rope", DType::kF32,
                                       {1, Hq, T, Dh}, rope_attrs);
      const ValueId kr = graph_.add_op("rope", {kh, positions, rope_cos, rope_sin}, fmt::format("k_new_{}", l),
                                       DType::kF32, {1, Hkv, T, Dh}, rope_attrs);
      new_kv.push_back(kr);
      new_kv.push_back(vh);
      // The cache update writes the new slices into the cache buffer in place (an alias of the
      // cache input); the runner writes the same slices from the k/v outputs.
      const ValueId k_full = cache_update(caches[l].first, positions, kr, n + "k_cache_updated");
      const ValueId v_full = cache_update(caches[l].second, positions, vh, n + "v_cache_updated");
      const ValueId attn = graph_.add_op("attention", {qr, k_full, v_full, positions}, n + "attn", DType::kF32,
                                         {1, Hq, T, Dh}, {{"scale", 1.0 / std::sqrt(static_cast<double>(Dh))}});
      const ValueId merged = from_heads(attn, n + "attn", Hq);
      KESTREL_ASSIGN_OR_RETURN(const ValueId o, linear(merged, p + "self_attn.o_proj", n + "o", {1, T, D}));
      x = graph_.add_op("add", {x, o}, n + "residual_attn", DType::kF32, {1, T, D});

      KESTREL_ASSIGN_OR_RETURN(const ValueId mlp_norm, vector(p + "post_attention_layernorm.weight"));
      const ValueId h2 = rms_norm(x, mlp_norm, n + "mlp_norm", {1, T, D});
      const int64_t F = config_.intermediate_size;
      KESTREL_ASSIGN_OR_RETURN(const ValueId gate, linear(h2, p + "mlp.gate_proj", n + "gate", {1, T, F}));
      KESTREL_ASSIGN_OR_RETURN(const ValueId up, linear(h2, p + "mlp.up_proj", n + "up", {1, T, F}));
      const ValueId act = graph_.add_op("silu", {gate}, n + "gate_silu", DType::kF32, {1, T, F});
      const ValueId prod = graph_.add_op("mul", {act, up}, n + "gated", DType::kF32, {1, T, F});
      KESTREL_ASSIGN_OR_RETURN(const ValueId down, linear(prod, p + "mlp.down_proj", n + "down", {1, T, D}));
      x = graph_.add_op("add", {x, down}, n + "residual_mlp", DType::kF32, {1, T, D});
    }

    KESTREL_ASSIGN_OR_RETURN(const ValueId final_norm, vector("model.norm.weight"));
    ValueId out = rms_norm(x, final_norm, "final_norm", {1, T, D});
    int64_t logit_rows = T;
    if (options_.logits == "last" && T > 1) {
      out = graph_.add_op("slice", {out}, "last_hidden", DType::kF32, {1, 1, D},
                          {{"axis", int64_t{1}}, {"start", T - 1}, {"end", T}});
      logit_rows = 1;
    }
    const std::string head = config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
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

  ValueId constant(const std::string& name, std::vector<int64_t> shape, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return graph_.add_input(name, DType::kF32, std::move(shape), InputKind::kConstant,
                            ConstantData::owned(std::move(bytes)));
  }

  ValueId rms_norm(ValueId x, ValueId weight, const std::string& name, std::vector<int64_t> shape) {
    return graph_.add_op("rms_norm", {x, weight}, name, DType::kF32, std::move(shape),
                         {{"eps", config_.rms_norm_eps}});
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

  // [1, T, H*Dh] -> [1, H, T, Dh]: a zero-copy reshape, then a transpose.
  ValueId to_heads(ValueId x, const std::string& name, int64_t heads, std::string out_name = "") {
    const int64_t T = options_.step, Dh = config_.head_dim;
    const ValueId split = reshape(x, name + "_split", {1, T, heads, Dh});
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

  ValueId cache_update(ValueId cache, ValueId positions, ValueId slice, const std::string& name) {
    const ValueId out = graph_.add_op("index_copy", {cache, positions, slice}, name, DType::kF32,
                                      graph_.value(cache).shape, {{"axis", int64_t{2}}});
    graph_.value(out).alias_of = cache;
    return out;
  }

  WeightCache& weights_;
  const DecoderOptions& options_;
  const ModelConfig& config_;
  Graph graph_;
  std::map<std::string, ValueId> parameters_;
};

}  // namespace

Result<Graph> build_decoder_graph(WeightCache& weights, const DecoderOptions& options) {
  return DecoderGraphBuilder(weights, options).build();
}

}  // namespace kestrel::exporter
