#include "export/arch/common.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

using nlohmann::json;

std::vector<ConfigField> common_fields(const CommonDefaults& d) {
  return {
      {"vocab_size", d.vocab_size},
      {"hidden_size", json()},
      {"intermediate_size", json()},
      {"num_hidden_layers", json()},
      {"num_attention_heads", json()},
      {"num_key_value_heads", json()},
      {"head_dim", d.head_dim},
      {"max_position_embeddings", d.max_position_embeddings},
      {"rms_norm_eps", d.rms_norm_eps},
      {"rope_theta", d.rope_theta},
      {"rope_scaling", json()},
      {"rope_parameters", json()},
      {"partial_rotary_factor", 1.0},
      {"original_max_position_embeddings", nullptr},  // longrope's pretraining context
      {"tie_word_embeddings", d.tie_word_embeddings},
      {d.activation_key, d.activation},
  };
}

Status read_dimensions(const ConfigReader& r, ModelConfig& c) {
  KESTREL_ASSIGN_OR_RETURN(c.vocab_size, r.positive("vocab_size", kMaxVocab));
  KESTREL_ASSIGN_OR_RETURN(c.hidden_size, r.positive("hidden_size", kMaxHidden));
  KESTREL_ASSIGN_OR_RETURN(c.intermediate_size, r.positive("intermediate_size", kMaxIntermediate));
  KESTREL_ASSIGN_OR_RETURN(c.num_layers, r.positive("num_hidden_layers", kMaxLayers));
  KESTREL_ASSIGN_OR_RETURN(c.num_heads, r.positive("num_attention_heads", kMaxHeads));
  KESTREL_ASSIGN_OR_RETURN(c.num_kv_heads, r.positive("num_key_value_heads", kMaxHeads, c.num_heads));
  if (r.has("head_dim") || !r.declared_default("head_dim").is_null()) {
    KESTREL_ASSIGN_OR_RETURN(c.head_dim, r.positive("head_dim", kMaxHeadDim));
  } else {
    if (c.hidden_size % c.num_heads != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: hidden_size {} is not a multiple of num_attention_heads {} (and no head_dim is given)",
                        r.source(), c.hidden_size, c.num_heads);
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (c.num_heads % c.num_kv_heads != 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: num_attention_heads {} is not a multiple of num_key_value_heads {}",
                      r.source(), c.num_heads, c.num_kv_heads);
  if (c.head_dim % 2 != 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: head_dim {} must be even for rotary embeddings", r.source(),
                      c.head_dim);
  KESTREL_ASSIGN_OR_RETURN(c.max_position_embeddings, r.positive("max_position_embeddings", kMaxPositions));
  KESTREL_ASSIGN_OR_RETURN(c.rms_norm_eps, r.number("rms_norm_eps"));
  if (!(c.rms_norm_eps > 0) || !std::isfinite(c.rms_norm_eps))
    return make_error(ErrorCode::kInvalidArgument, "{}: rms_norm_eps must be positive, got {}", r.source(),
                      c.rms_norm_eps);
  KESTREL_ASSIGN_OR_RETURN(c.tie_word_embeddings, r.boolean("tie_word_embeddings"));
  c.layers.assign(static_cast<size_t>(c.num_layers), LayerSpec{});
  return ok_status();
}

namespace {

// Keys a rope_scaling type reads beyond its type name; anything else in the object is refused.
const std::vector<std::string>& scaling_keys(const std::string& type) {
  static const std::vector<std::string> kDefault = {};
  static const std::vector<std::string> kLinear = {"factor"};
  static const std::vector<std::string> kLlama3 = {"factor", "low_freq_factor", "high_freq_factor",
                                                   "original_max_position_embeddings"};
  static const std::vector<std::string> kLongrope = {"short_factor", "long_factor", "factor", "attention_factor",
                                                     "original_max_position_embeddings"};
  return type == "linear" ? kLinear : type == "llama3" ? kLlama3 : type == "longrope" ? kLongrope : kDefault;
}

}  // namespace

// Parses one rope_scaling (or rope_parameters) object. `original_fallback` is the config's
// original_max_position_embeddings for longrope (Phi-3 keeps it at the top level).
Result<RopeScaling> parse_rope_scaling(const json& object, const std::string& source, int64_t max_position_embeddings,
                                       int64_t original_fallback) {
  if (!object.is_object())
    return make_error(ErrorCode::kInvalidArgument, "{} must be an object, got {}", source, object.dump());
  ConfigReader r(object, source);
  std::string type;
  if (r.has("rope_type")) {
    KESTREL_ASSIGN_OR_RETURN(type, r.string("rope_type"));
  } else {
    KESTREL_ASSIGN_OR_RETURN(type, r.string("type", "default"));
  }
  static const std::vector<std::string> kSupported = {"default", "linear", "llama3", "longrope"};
  if (std::find(kSupported.begin(), kSupported.end(), type) == kSupported.end())
    return make_error(ErrorCode::kUnsupported, "{}: type '{}' is not supported (supported: {})", source, type,
                      fmt::join(kSupported, ", "));
  std::set<std::string> allowed = {"type", "rope_type", "rope_theta", "partial_rotary_factor"};
  for (const std::string& key : scaling_keys(type)) allowed.insert(key);
  for (const auto& [key, value] : object.items())
    if (!value.is_null() && allowed.count(key) == 0)
      return make_error(ErrorCode::kUnsupported, "{}: key '{}' = {} is not supported with type '{}' (it reads: {})",
                        source, key, value.dump(), type, fmt::join(scaling_keys(type), ", "));

  RopeScaling scaling;
  if (type == "default") return scaling;
  scaling.type = type;
  if (type == "llama3") {
    std::vector<std::string> missing;
    for (const std::string& key : scaling_keys(type))
      if (!r.has(key)) missing.push_back(key);
    if (!missing.empty())
      return make_error(ErrorCode::kInvalidArgument, "{}: type 'llama3' needs {} (missing: {})", source,
                        fmt::join(scaling_keys(type), ", "), fmt::join(missing, ", "));
    KESTREL_ASSIGN_OR_RETURN(scaling.factor, r.number("factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.low_freq_factor, r.number("low_freq_factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.high_freq_factor, r.number("high_freq_factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                             r.positive("original_max_position_embeddings", kMaxPositions));
    if (!(scaling.low_freq_factor > 0) || !(scaling.high_freq_factor > scaling.low_freq_factor))
      return make_error(ErrorCode::kInvalidArgument, "{}: needs 0 < low_freq_factor ({}) < high_freq_factor ({})",
                        source, scaling.low_freq_factor, scaling.high_freq_factor);
  } else if (type == "linear") {
    KESTREL_ASSIGN_OR_RETURN(scaling.factor, r.number("factor"));
  } else {  // longrope
    KESTREL_ASSIGN_OR_RETURN(scaling.short_factor, r.numbers("short_factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.long_factor, r.numbers("long_factor"));
    KESTREL_ASSIGN_OR_RETURN(scaling.original_max_position_embeddings,
                             r.positive("original_max_position_embeddings", kMaxPositions, original_fallback));
    // transformers: without a factor, the ratio of the extended to the original context.
    KESTREL_ASSIGN_OR_RETURN(scaling.factor,
                             r.number("factor", static_cast<double>(max_position_embeddings) /
                                                    static_cast<double>(scaling.original_max_position_embeddings)));
    if (r.has("attention_factor")) {
      KESTREL_ASSIGN_OR_RETURN(double attention, r.number("attention_factor"));
      if (!(attention > 0))
        return make_error(ErrorCode::kInvalidArgument, "{}: attention_factor must be positive, got {}", source,
                          attention);
      scaling.attention_factor = attention;
    }
    for (const auto* list : {&scaling.short_factor, &scaling.long_factor})
      for (double f : *list)
        if (!(f > 0) || !std::isfinite(f))
          return make_error(ErrorCode::kInvalidArgument, "{}: short_factor and long_factor must be positive, got {}",
                            source, f);
  }
  if (!(scaling.factor > 0) || !std::isfinite(scaling.factor))
    return make_error(ErrorCode::kInvalidArgument, "{}: factor must be positive, got {}", source, scaling.factor);
  return scaling;
}

Status read_rope(const ConfigReader& r, ModelConfig& c, const RopeOptions& options) {
  const json* parameters = options.parameters;
  std::string parameters_label = r.source() + ": rope_parameters";
  if (parameters == nullptr) {
    parameters = r.find("rope_parameters");
    if (parameters != nullptr && !parameters->is_object())
      return r.invalid("rope_parameters", "must be an object");
  }
  // rope_theta: the config's, else the one nested in rope_parameters, else the default.
  if (r.has("rope_theta") || parameters == nullptr || !parameters->contains("rope_theta")) {
    KESTREL_ASSIGN_OR_RETURN(c.rope_theta, r.number("rope_theta"));
  } else {
    KESTREL_ASSIGN_OR_RETURN(c.rope_theta, ConfigReader(*parameters, parameters_label).number("rope_theta"));
  }
  if (!(c.rope_theta > 0) || !std::isfinite(c.rope_theta))
    return make_error(ErrorCode::kInvalidArgument, "{}: rope_theta must be positive, got {}", r.source(), c.rope_theta);

  // longrope's pretraining context: the config's top-level key (Phi-3 declares a default),
  // else max_position_embeddings, as transformers falls back.
  int64_t original = c.max_position_embeddings;
  const std::string original_key = "original_max_position_embeddings";
  if (r.has(original_key) || !r.declared_default(original_key).is_null()) {
    KESTREL_ASSIGN_OR_RETURN(original, r.positive(original_key, kMaxPositions));
  }
  if (const json* scaling = r.find("rope_scaling")) {
    KESTREL_ASSIGN_OR_RETURN(c.rope_scaling, parse_rope_scaling(*scaling, r.source() + ": rope_scaling",
                                                                c.max_position_embeddings, original));
  } else if (parameters != nullptr) {
    KESTREL_ASSIGN_OR_RETURN(c.rope_scaling,
                             parse_rope_scaling(*parameters, parameters_label, c.max_position_embeddings, original));
  }

  // partial_rotary_factor: at the top level, or nested in rope_parameters.
  double partial = 1.0;
  std::string partial_key = "partial_rotary_factor";
  if (r.has(partial_key)) {
    KESTREL_ASSIGN_OR_RETURN(partial, r.number(partial_key));
  } else if (parameters != nullptr && parameters->contains(partial_key) && !(*parameters)[partial_key].is_null()) {
    KESTREL_ASSIGN_OR_RETURN(partial, ConfigReader(*parameters, parameters_label).number(partial_key));
  }
  if (partial != 1.0 && !options.partial_rotary)
    return make_error(ErrorCode::kUnsupported,
                      "{}: partial_rotary_factor = {} is not supported for {} (its attention rotates whole heads)",
                      r.source(), partial, c.architecture);
  if (!(partial > 0 && partial <= 1))
    return make_error(ErrorCode::kInvalidArgument, "{}: partial_rotary_factor must be in (0, 1], got {}", r.source(),
                      partial);
  c.rotary_dim = static_cast<int64_t>(static_cast<double>(c.head_dim) * partial);  // int() as in transformers
  if (c.rotary_dim < 2 || c.rotary_dim % 2 != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: partial_rotary_factor {} gives {} rotary dims of head_dim {}; it must be even and >= 2",
                      r.source(), partial, c.rotary_dim, c.head_dim);
  if (c.rope_scaling.type == "longrope") {
    const size_t pairs = static_cast<size_t>(c.rotary_dim / 2);
    if (c.rope_scaling.short_factor.size() != pairs || c.rope_scaling.long_factor.size() != pairs)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: longrope short_factor ({}) and long_factor ({}) need {} entries (rotary dims / 2)",
                        r.source(), c.rope_scaling.short_factor.size(), c.rope_scaling.long_factor.size(), pairs);
  }
  return ok_status();
}

Status read_activation(const ConfigReader& r, const std::string& key, ModelConfig& c) {
  KESTREL_ASSIGN_OR_RETURN(std::string act, r.string(key));
  if (act == "silu" || act == "swish") {
    c.hidden_act = "silu";
  } else if (act == "gelu") {
    c.hidden_act = "gelu";
  } else if (act == "gelu_new" || act == "gelu_pytorch_tanh") {
    c.hidden_act = "gelu_tanh";
  } else {
    return r.unsupported(key, "supported activations: silu, swish, gelu, gelu_new, gelu_pytorch_tanh");
  }
  return ok_status();
}

Status read_decoder(const ConfigReader& r, ModelConfig& c, const RopeOptions& rope) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c));
  KESTREL_RETURN_IF_ERROR(read_rope(r, c, rope));
  // hidden_act, or Gemma's hidden_activation: whichever the architecture declares.
  const std::string key = r.declared_default("hidden_activation").is_null() ? "hidden_act" : "hidden_activation";
  return read_activation(r, key, c);
}

Status read_attention_bias(const ConfigReader& r, ModelConfig& c) {
  KESTREL_ASSIGN_OR_RETURN(c.attention_bias, r.boolean("attention_bias"));
  c.o_proj_bias = c.attention_bias;
  return ok_status();
}

Status read_uniform_sliding_window(const ConfigReader& r, ModelConfig& c) {
  const auto it = r.object().find("sliding_window");
  const bool explicit_null = it != r.object().end() && it->is_null();
  c.sliding_window = 0;
  if (!explicit_null && (r.has("sliding_window") || !r.declared_default("sliding_window").is_null())) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  }
  for (LayerSpec& layer : c.layers) layer.sliding = c.sliding_window > 0;
  return ok_status();
}

Status read_layer_types(const ConfigReader& r, ModelConfig& c, const std::function<bool(int64_t)>& default_sliding) {
  if (const json* types = r.find("layer_types")) {
    if (!types->is_array() || static_cast<int64_t>(types->size()) != c.num_layers)
      return r.invalid("layer_types", fmt::format("needs one entry per layer ({})", c.num_layers));
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const json& type = (*types)[static_cast<size_t>(i)];
      if (type == "sliding_attention") {
        c.layers[i].sliding = true;
      } else if (type == "full_attention") {
        c.layers[i].sliding = false;
      } else {
        return make_error(ErrorCode::kUnsupported,
                          "{}: layer_types[{}] = {} is not supported (full_attention, sliding_attention)", r.source(), i,
                          type.dump());
      }
    }
  } else {
    for (int64_t i = 0; i < c.num_layers; ++i) c.layers[i].sliding = default_sliding(i);
  }
  for (int64_t i = 0; i < c.num_layers; ++i)
    if (c.layers[i].sliding && c.sliding_window <= 0)
      return make_error(ErrorCode::kInvalidArgument, "{}: layer {} uses sliding attention but sliding_window is not set",
                        r.source(), i);
  return ok_status();
}

std::vector<ConfigField> qwen_sliding_fields() {
  return {{"use_sliding_window", false}, {"sliding_window", 4096}, {"max_window_layers", 28}, {"layer_types", nullptr}};
}

Status read_qwen_sliding_window(const ConfigReader& r, ModelConfig& c) {
  KESTREL_ASSIGN_OR_RETURN(bool use_sliding, r.boolean("use_sliding_window"));
  KESTREL_ASSIGN_OR_RETURN(int64_t max_window_layers, r.integer("max_window_layers"));
  // transformers: sliding_window = sliding_window if use_sliding_window else None; layers at or
  // past max_window_layers slide.
  c.sliding_window = 0;
  if (use_sliding) {
    KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  }
  return read_layer_types(r, c, [&](int64_t i) { return c.sliding_window > 0 && i >= max_window_layers; });
}

}  // namespace kestrel::exporter::arch
