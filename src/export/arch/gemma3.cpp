// Gemma3ForCausalLM (model_type gemma3_text: Gemma 3 270M / 1B): embeddings scaled by
// sqrt(hidden_size) in the embedding dtype; RMSNorm scaling by (1 + weight); four norms per
// layer (input, post_attention, pre_feedforward, post_feedforward); per-head q/k RMSNorm;
// scores scaled by query_pre_attn_scalar^-0.5; gelu_pytorch_tanh; sliding layers (layer_types,
// else every layer but each sliding_window_pattern-th) with their own rope base
// (rope_local_base_freq, unscaled); full layers use rope_theta with rope_scaling. Fields and
// defaults from transformers' Gemma3TextConfig.
#include <cmath>

#include "export/arch/common.h"
#include "export/arch/registry.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter::arch {

namespace {

using nlohmann::json;

Status read_rope_per_layer_type(const ConfigReader& r, ModelConfig& c) {
  const json* parameters = r.find("rope_parameters");
  const bool nested = parameters != nullptr && parameters->is_object() &&
                      (parameters->contains("full_attention") || parameters->contains("sliding_attention"));
  if (!nested) {
    // rope_theta / rope_scaling for full layers, rope_local_base_freq for sliding ones.
    KESTREL_RETURN_IF_ERROR(read_rope(r, c));
    KESTREL_ASSIGN_OR_RETURN(c.local_rope_theta, r.number("rope_local_base_freq"));
  } else {
    const std::string label = r.source() + ": rope_parameters";
    static const json kEmpty = json::object();
    const json& full = parameters->contains("full_attention") ? (*parameters)["full_attention"] : kEmpty;
    const json& sliding = parameters->contains("sliding_attention") ? (*parameters)["sliding_attention"] : kEmpty;
    RopeOptions options;
    options.parameters = &full;
    KESTREL_RETURN_IF_ERROR(read_rope(r, c, options));
    KESTREL_ASSIGN_OR_RETURN(RopeScaling local,
                             parse_rope_scaling(sliding, label + ".sliding_attention", c.max_position_embeddings,
                                                c.max_position_embeddings));
    if (local.type != "none")
      return make_error(ErrorCode::kUnsupported, "{}.sliding_attention: rope type '{}' is not supported (default only)",
                        label, local.type);
    KESTREL_ASSIGN_OR_RETURN(double fallback, r.number("rope_local_base_freq"));
    KESTREL_ASSIGN_OR_RETURN(c.local_rope_theta,
                             ConfigReader(sliding, label + ".sliding_attention").number("rope_theta", fallback));
  }
  if (!(c.local_rope_theta > 0) || !std::isfinite(c.local_rope_theta))
    return make_error(ErrorCode::kInvalidArgument, "{}: rope_local_base_freq must be positive, got {}", r.source(),
                      c.local_rope_theta);
  return ok_status();
}

Status read_gemma3_config(const ConfigReader& r, ModelConfig& c) {
  KESTREL_RETURN_IF_ERROR(read_dimensions(r, c));
  KESTREL_RETURN_IF_ERROR(read_activation(r, "hidden_activation", c));
  KESTREL_RETURN_IF_ERROR(read_attention_bias(r, c));
  KESTREL_ASSIGN_OR_RETURN(double scalar, r.number("query_pre_attn_scalar"));
  if (!(scalar > 0) || !std::isfinite(scalar))
    return r.invalid("query_pre_attn_scalar", "must be positive");
  c.attention_scale = 1.0 / std::sqrt(scalar);
  KESTREL_RETURN_IF_ERROR(r.refuse_unless("final_logit_softcapping", nullptr,
                                          "logit soft-capping is not implemented (Gemma 3 ships null)"));
  KESTREL_RETURN_IF_ERROR(r.refuse_unless("attn_logit_softcapping", nullptr,
                                          "attention soft-capping is not implemented (Gemma 3 ships null)"));
  KESTREL_RETURN_IF_ERROR(r.refuse_unless("use_bidirectional_attention", false,
                                          "bidirectional attention does not fit a causal decoder"));
  KESTREL_RETURN_IF_ERROR(read_rope_per_layer_type(r, c));
  KESTREL_ASSIGN_OR_RETURN(c.sliding_window, r.positive("sliding_window", kMaxPositions));
  // Older configs give the pattern as an int (every pattern-th layer is full); newer ones list
  // layer_types (some also keep "_sliding_window_pattern").
  const std::string pattern_key = r.has("sliding_window_pattern") || !r.has("_sliding_window_pattern")
                                      ? "sliding_window_pattern"
                                      : "_sliding_window_pattern";
  KESTREL_ASSIGN_OR_RETURN(int64_t pattern, r.positive(pattern_key, kMaxLayers + 1));
  return read_layer_types(r, c, [pattern](int64_t i) { return (i + 1) % pattern != 0; });
}

Architecture make_gemma3() {
  Architecture a;
  a.name = "Gemma3ForCausalLM";
  a.model_types = {"gemma3_text"};
  a.names.q_norm = "self_attn.q_norm.weight";
  a.names.k_norm = "self_attn.k_norm.weight";
  a.names.post_attn_norm = "post_attention_layernorm.weight";
  a.names.ffn_norm = "pre_feedforward_layernorm.weight";
  a.names.post_ffn_norm = "post_feedforward_layernorm.weight";
  a.features.qk_norm = true;
  a.features.sandwich_norms = true;
  a.features.norm_plus_one = true;
  a.features.embedding_scale = true;
  a.fields = common_fields({.vocab_size = 262208, .max_position_embeddings = 131072, .rms_norm_eps = 1e-6,
                            .rope_theta = 1000000.0, .tie_word_embeddings = true, .head_dim = 256,
                            .activation_key = "hidden_activation", .activation = "gelu_pytorch_tanh"});
  a.fields.push_back({"attention_bias", false});
  a.fields.push_back({"query_pre_attn_scalar", 256});
  a.fields.push_back({"sliding_window", 4096});
  a.fields.push_back({"sliding_window_pattern", 6});
  a.fields.push_back({"_sliding_window_pattern", 6});
  a.fields.push_back({"layer_types", nullptr});
  a.fields.push_back({"rope_local_base_freq", 10000.0});
  a.fields.push_back({"final_logit_softcapping", nullptr});
  a.fields.push_back({"attn_logit_softcapping", nullptr});
  a.fields.push_back({"use_bidirectional_attention", false});
  a.read_config = read_gemma3_config;
  return a;
}

}  // namespace

const Architecture& gemma3() {
  static const Architecture kArchitecture = make_gemma3();
  return kArchitecture;
}

}  // namespace kestrel::exporter::arch
