#include "llm/reference_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numbers>

namespace kestrel::testing {

namespace {

using nlohmann::json;

// Decodes one stored element (f32, f16 or bf16) to double, by the IEEE formats' definitions.
double element(const fixtures::SafetensorsEntry& entry, size_t i) {
  uint16_t half;
  switch (entry.dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, entry.data.data() + 4 * i, 4);
      return f;
    }
    case DType::kF16: {
      std::memcpy(&half, entry.data.data() + 2 * i, 2);
      const int exponent = (half >> 10) & 0x1f, mantissa = half & 0x3ff;
      const double sign = (half & 0x8000) ? -1.0 : 1.0;
      if (exponent == 0) return sign * std::ldexp(mantissa, -24);
      return sign * std::ldexp(1024 + mantissa, exponent - 25);
    }
    case DType::kBF16: {
      std::memcpy(&half, entry.data.data() + 2 * i, 2);
      const uint32_t bits = static_cast<uint32_t>(half) << 16;
      float f;
      std::memcpy(&f, &bits, 4);
      return f;
    }
    default:
      ADD_FAILURE() << "unexpected dtype in " << entry.name;
      return 0;
  }
}

// A positive value rounded to nearest-even in a format with `mantissa_bits` explicit bits
// (the embedding scale cast to the weights' dtype, as transformers' Gemma 3 does).
double round_mantissa(double x, int mantissa_bits) {
  int exponent;
  std::frexp(x, &exponent);  // x = m * 2^exponent, m in [0.5, 1)
  const double ulp = std::ldexp(1.0, exponent - 1 - mantissa_bits);
  return std::nearbyint(x / ulp) * ulp;
}

std::vector<double> matvec(const std::vector<double>& w, size_t row0, size_t rows, size_t cols,
                           const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) y[r] += w[(row0 + r) * cols + c] * x[c];
  return y;
}

void add_bias(std::vector<double>& y, const std::vector<double>& b, size_t offset = 0) {
  for (size_t i = 0; i < y.size(); ++i) y[i] += b[offset + i];
}

double activation(const std::string& act, double x) {
  if (act == "silu") return x / (1 + std::exp(-x));
  if (act == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  // gelu_new / gelu_pytorch_tanh
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

template <typename T>
T value_or(const json& j, const char* key, T fallback) {
  const auto it = j.find(key);
  return it == j.end() || it->is_null() ? fallback : it->get<T>();
}

}  // namespace

ReferenceModel::ReferenceModel(const fixtures::FixtureConfig& config, bool interleaved_rope, int64_t context)
    : interleaved_(interleaved_rope), context_(context) {
  auto text = fixtures::fixture_config_json(config);
  EXPECT_TRUE(text.ok());
  const json j = json::parse(text.ok() ? *text : std::string("{}"));
  type_ = value_or<std::string>(j, "model_type", "llama");
  gemma_ = type_ == "gemma3_text";
  fused_ = type_ == "phi3";
  D_ = j.at("hidden_size");
  F_ = j.at("intermediate_size");
  L_ = j.at("num_hidden_layers");
  Hq_ = j.at("num_attention_heads");
  Hkv_ = value_or<int64_t>(j, "num_key_value_heads", Hq_);
  V_ = j.at("vocab_size");
  max_positions_ = j.at("max_position_embeddings");
  const int64_t default_head_dim = type_ == "qwen3" ? 128 : gemma_ ? 256 : D_ / Hq_;
  Dh_ = value_or<int64_t>(j, "head_dim", default_head_dim);
  eps_ = value_or<double>(j, "rms_norm_eps", type_ == "phi3" ? 1e-5 : 1e-6);
  theta_ = value_or<double>(j, "rope_theta", gemma_ ? 1e6 : type_ == "smollm3" ? 2e6 : 1e4);
  act_ = gemma_ ? value_or<std::string>(j, "hidden_activation", "gelu_pytorch_tanh")
                : value_or<std::string>(j, "hidden_act", "silu");
  if (act_ == "swish") act_ = "silu";
  tie_ = value_or<bool>(j, "tie_word_embeddings", gemma_ || type_ == "smollm3");
  const bool attention_bias = value_or<bool>(j, "attention_bias", false);
  qkv_bias_ = type_ == "qwen2" || (attention_bias && type_ != "mistral" && type_ != "phi3");
  o_bias_ = attention_bias && type_ != "qwen2" && type_ != "mistral" && type_ != "phi3";
  mlp_bias_ = value_or<bool>(j, "mlp_bias", false) && (type_ == "llama" || type_ == "smollm3");
  qk_norm_ = type_ == "qwen3" || gemma_;
  scale_ = gemma_ ? std::pow(value_or<double>(j, "query_pre_attn_scalar", 256), -0.5)
                  : 1.0 / std::sqrt(static_cast<double>(Dh_));
  if (gemma_) {
    // sqrt(hidden_size) cast to the embedding dtype.
    embed_scale_ = std::sqrt(static_cast<double>(D_));
    embed_scale_ = config.dtype == DType::kBF16 ? round_mantissa(embed_scale_, 7)
                   : config.dtype == DType::kF16 ? round_mantissa(embed_scale_, 10)
                                                 : static_cast<float>(embed_scale_);
    local_theta_ = value_or<double>(j, "rope_local_base_freq", 10000.0);
  }
  rotary_ = static_cast<int64_t>(static_cast<double>(Dh_) * value_or<double>(j, "partial_rotary_factor", 1.0));
  if (const auto it = j.find("rope_scaling"); it != j.end() && it->is_object()) {
    rope_type_ = it->contains("rope_type") ? it->at("rope_type").get<std::string>()
                                           : value_or<std::string>(*it, "type", "default");
    for (const auto& [key, value] : it->items())
      if (value.is_number()) rope_[key] = value.get<double>();
    short_factor_ = value_or<std::vector<double>>(*it, "short_factor", {});
    long_factor_ = value_or<std::vector<double>>(*it, "long_factor", {});
    if (!rope_.count("original_max_position_embeddings"))
      rope_["original_max_position_embeddings"] =
          value_or<double>(j, "original_max_position_embeddings", static_cast<double>(max_positions_));
  }
  if (context_ <= 0) context_ = max_positions_;

  // Per-layer attention kinds.
  layers_.assign(static_cast<size_t>(L_), Layer{});
  std::vector<std::string> types;
  if (const auto it = j.find("layer_types"); it != j.end() && it->is_array()) types = it->get<std::vector<std::string>>();
  const auto sliding_from_types = [&](int64_t i, bool fallback) {
    return types.empty() ? fallback : types[static_cast<size_t>(i)] == "sliding_attention";
  };
  for (int64_t i = 0; i < L_; ++i) {
    Layer& layer = layers_[static_cast<size_t>(i)];
    if (type_ == "mistral") {
      const auto it = j.find("sliding_window");
      layer.window = it == j.end() ? 4096 : it->is_null() ? 0 : it->get<int64_t>();
    } else if (type_ == "phi3") {
      layer.window = value_or<int64_t>(j, "sliding_window", 0);
    } else if (type_ == "qwen2" || type_ == "qwen3") {
      const int64_t window = value_or<bool>(j, "use_sliding_window", false) ? value_or<int64_t>(j, "sliding_window", 4096) : 0;
      if (sliding_from_types(i, window > 0 && i >= value_or<int64_t>(j, "max_window_layers", 28))) layer.window = window;
    } else if (gemma_) {
      const int64_t pattern = value_or<int64_t>(j, "sliding_window_pattern", 6);
      if (sliding_from_types(i, (i + 1) % pattern != 0)) {
        layer.window = value_or<int64_t>(j, "sliding_window", 4096);
        layer.local = true;
      }
    } else if (type_ == "smollm3") {
      if (const auto it = j.find("no_rope_layers"); it != j.end() && it->is_array())
        layer.rope = (*it)[static_cast<size_t>(i)] == 1;
      else
        layer.rope = (i + 1) % value_or<int64_t>(j, "no_rope_layer_interval", 4) != 0;
      const int64_t window = value_or<bool>(j, "use_sliding_window", false) ? value_or<int64_t>(j, "sliding_window", 0) : 0;
      if (sliding_from_types(i, window > 0 && !layer.rope)) layer.window = window;
    }
  }

  auto tensors = fixtures::make_fixture_tensors(config);
  EXPECT_TRUE(tensors.ok());
  if (!tensors.ok()) return;
  for (const auto& entry : *tensors) {
    size_t numel = 1;
    for (int64_t d : entry.shape) numel *= static_cast<size_t>(d);
    std::vector<double> values(numel);
    for (size_t i = 0; i < numel; ++i) values[i] = element(entry, i);
    weights_[entry.name] = std::move(values);
  }
}

const std::vector<double>& ReferenceModel::weight(const std::string& name) const {
  auto it = weights_.find(name);
  if (it == weights_.end()) {
    ADD_FAILURE() << "reference model: no tensor " << name;
    static const std::vector<double> empty(1 << 20, 0.0);
    return empty;
  }
  return it->second;
}

// modeling_rope_utils: default, linear, llama3 and longrope inverse frequencies.
std::vector<double> ReferenceModel::inverse_frequencies(bool local) const {
  const int64_t dim = rotary_;
  std::vector<double> inv(dim / 2);
  const double base = local ? local_theta_ : theta_;
  for (int64_t i = 0; i < dim / 2; ++i) inv[i] = 1.0 / std::pow(base, static_cast<double>(2 * i) / dim);
  if (local || rope_type_ == "default") return inv;
  const auto param = [&](const char* key) { return rope_.count(key) ? rope_.at(key) : 0.0; };
  if (rope_type_ == "linear") {
    for (double& f : inv) f /= param("factor");
  } else if (rope_type_ == "llama3") {
    const double factor = param("factor"), low = param("low_freq_factor"), high = param("high_freq_factor");
    const double original = param("original_max_position_embeddings");
    for (double& f : inv) {
      const double wavelength = 2 * std::numbers::pi / f;
      if (wavelength < original / high) continue;
      if (wavelength > original / low) {
        f = f / factor;
      } else {
        const double smooth = (original / wavelength - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  } else if (rope_type_ == "longrope") {
    const auto& ext = context_ > param("original_max_position_embeddings") ? long_factor_ : short_factor_;
    EXPECT_EQ(ext.size(), inv.size());
    for (size_t i = 0; i < inv.size() && i < ext.size(); ++i)
      inv[i] = 1.0 / (ext[i] * std::pow(base, static_cast<double>(2 * i) / dim));
  } else {
    ADD_FAILURE() << "reference model: rope type " << rope_type_;
  }
  return inv;
}

std::vector<std::vector<double>> ReferenceModel::forward(const std::vector<int64_t>& tokens) const {
  const size_t T = tokens.size(), D = D_, F = F_, Hq = Hq_, Hkv = Hkv_, Dh = Dh_, V = V_;
  const std::vector<double> global_inv = inverse_frequencies(false);
  const std::vector<double> local_inv = gemma_ ? inverse_frequencies(true) : global_inv;
  double magnitude = 1;  // longrope's attention factor scales cos and sin
  if (rope_type_ == "longrope") {
    const double original = rope_.at("original_max_position_embeddings");
    const double factor = rope_.count("factor") ? rope_.at("factor") : static_cast<double>(max_positions_) / original;
    magnitude = rope_.count("attention_factor") ? rope_.at("attention_factor")
                : factor <= 1                   ? 1.0
                                                : std::sqrt(1 + std::log(factor) / std::log(original));
  }

  // RMSNorm: x / rms(x) * w, or * (1 + w) for Gemma.
  const auto norm = [&](const std::vector<double>& x, const std::vector<double>& w) {
    double sum = 0;
    for (double v : x) sum += v * v;
    const double inv = 1.0 / std::sqrt(sum / static_cast<double>(x.size()) + eps_);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * inv * (gemma_ ? 1 + w[i] : w[i]);
    return y;
  };
  // Rotates the first rotary_ dims of a head (rotate_half pairs (i, i + R/2), or interleaved).
  const auto rotate = [&](std::vector<double>& head, size_t position, const std::vector<double>& inv) {
    const size_t half = static_cast<size_t>(rotary_) / 2;
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(position) * inv[i];
      const double c = magnitude * std::cos(angle), s = magnitude * std::sin(angle);
      const size_t a = interleaved_ ? 2 * i : i, b = interleaved_ ? 2 * i + 1 : i + half;
      const double x0 = head[a], x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x1 * c + x0 * s;
    }
  };

  const auto& embed = weight("model.embed_tokens.weight");
  std::vector<std::vector<double>> x(T, std::vector<double>(D));
  for (size_t t = 0; t < T; ++t)
    for (size_t d = 0; d < D; ++d) x[t][d] = embed[tokens[t] * D + d] * embed_scale_;

  for (int64_t l = 0; l < L_; ++l) {
    const Layer& layer = layers_[static_cast<size_t>(l)];
    const std::string p = "model.layers." + std::to_string(l) + ".";
    std::vector<std::vector<std::vector<double>>> q(T), k(T), v(T);  // [t][head][dh]
    for (size_t t = 0; t < T; ++t) {
      const auto h = norm(x[t], weight(p + "input_layernorm.weight"));
      std::vector<double> qf, kf, vf;
      if (fused_) {
        const auto& w = weight(p + "self_attn.qkv_proj.weight");
        qf = matvec(w, 0, Hq * Dh, D, h);
        kf = matvec(w, Hq * Dh, Hkv * Dh, D, h);
        vf = matvec(w, Hq * Dh + Hkv * Dh, Hkv * Dh, D, h);
      } else {
        qf = matvec(weight(p + "self_attn.q_proj.weight"), 0, Hq * Dh, D, h);
        kf = matvec(weight(p + "self_attn.k_proj.weight"), 0, Hkv * Dh, D, h);
        vf = matvec(weight(p + "self_attn.v_proj.weight"), 0, Hkv * Dh, D, h);
      }
      if (qkv_bias_) {
        add_bias(qf, weight(p + "self_attn.q_proj.bias"));
        add_bias(kf, weight(p + "self_attn.k_proj.bias"));
        add_bias(vf, weight(p + "self_attn.v_proj.bias"));
      }
      const auto split = [&](const std::vector<double>& flat, size_t heads, const char* norm_name) {
        std::vector<std::vector<double>> out(heads, std::vector<double>(Dh));
        for (size_t hd = 0; hd < heads; ++hd) {
          std::copy_n(flat.begin() + hd * Dh, Dh, out[hd].begin());
          if (norm_name != nullptr) out[hd] = norm(out[hd], weight(p + norm_name));
        }
        return out;
      };
      q[t] = split(qf, Hq, qk_norm_ ? "self_attn.q_norm.weight" : nullptr);
      k[t] = split(kf, Hkv, qk_norm_ ? "self_attn.k_norm.weight" : nullptr);
      v[t] = split(vf, Hkv, nullptr);
      if (layer.rope) {
        const auto& inv = layer.local ? local_inv : global_inv;
        for (auto& head : q[t]) rotate(head, t, inv);
        for (auto& head : k[t]) rotate(head, t, inv);
      }
      if (f16_cache_)
        for (auto* heads : {&k[t], &v[t]})
          for (auto& head : *heads)
            for (double& value : head) value = static_cast<double>(static_cast<_Float16>(value));
    }
    for (size_t t = 0; t < T; ++t) {
      // Sliding mask: kv_idx > q_idx - window.
      const size_t first = layer.window > 0 && t + 1 > static_cast<size_t>(layer.window) ? t + 1 - layer.window : 0;
      std::vector<double> merged(Hq * Dh, 0.0);
      for (size_t hd = 0; hd < Hq; ++hd) {
        const size_t g = hd / (Hq / Hkv);
        std::vector<double> scores;
        double best = -INFINITY;
        for (size_t s = first; s <= t; ++s) {
          double dot = 0;
          for (size_t d = 0; d < Dh; ++d) dot += q[t][hd][d] * k[s][g][d];
          scores.push_back(dot * scale_);
          best = std::max(best, scores.back());
        }
        double total = 0;
        for (double& score : scores) total += (score = std::exp(score - best));
        for (size_t s = first; s <= t; ++s)
          for (size_t d = 0; d < Dh; ++d) merged[hd * Dh + d] += scores[s - first] / total * v[s][g][d];
      }
      auto o = matvec(weight(p + "self_attn.o_proj.weight"), 0, D, Hq * Dh, merged);
      if (o_bias_) add_bias(o, weight(p + "self_attn.o_proj.bias"));
      if (gemma_) o = norm(o, weight(p + "post_attention_layernorm.weight"));
      for (size_t d = 0; d < D; ++d) x[t][d] += o[d];

      const auto h = norm(x[t], weight(p + (gemma_ ? "pre_feedforward_layernorm.weight" : "post_attention_layernorm.weight")));
      std::vector<double> gate, up;
      if (fused_) {
        const auto& w = weight(p + "mlp.gate_up_proj.weight");
        gate = matvec(w, 0, F, D, h);  // gate first, then up (chunk(2))
        up = matvec(w, F, F, D, h);
      } else {
        gate = matvec(weight(p + "mlp.gate_proj.weight"), 0, F, D, h);
        up = matvec(weight(p + "mlp.up_proj.weight"), 0, F, D, h);
        if (mlp_bias_) {
          add_bias(gate, weight(p + "mlp.gate_proj.bias"));
          add_bias(up, weight(p + "mlp.up_proj.bias"));
        }
      }
      for (size_t i = 0; i < F; ++i) gate[i] = activation(act_, gate[i]) * up[i];
      auto down = matvec(weight(p + "mlp.down_proj.weight"), 0, D, F, gate);
      if (mlp_bias_) add_bias(down, weight(p + "mlp.down_proj.bias"));
      if (gemma_) down = norm(down, weight(p + "post_feedforward_layernorm.weight"));
      for (size_t d = 0; d < D; ++d) x[t][d] += down[d];
    }
  }
  const auto& head = weight(tie_ ? "model.embed_tokens.weight" : "lm_head.weight");
  std::vector<std::vector<double>> logits(T);
  for (size_t t = 0; t < T; ++t) logits[t] = matvec(head, 0, V, D, norm(x[t], weight("model.norm.weight")));
  return logits;
}

std::vector<int64_t> ReferenceModel::greedy(std::vector<int64_t> prompt, int count) const {
  std::vector<int64_t> generated;
  for (int i = 0; i < count; ++i) {
    const auto logits = forward(prompt).back();
    const auto next = static_cast<int64_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    generated.push_back(next);
    prompt.push_back(next);
  }
  return generated;
}

double max_abs_error(std::span<const float> actual, const std::vector<double>& expected) {
  EXPECT_EQ(actual.size(), expected.size());
  double worst = 0;
  for (size_t i = 0; i < std::min(actual.size(), expected.size()); ++i)
    worst = std::max(worst, std::abs(static_cast<double>(actual[i]) - expected[i]));
  return worst;
}

}  // namespace kestrel::testing
