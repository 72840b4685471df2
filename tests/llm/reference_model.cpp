#include "llm/reference_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

namespace kestrel::testing {

namespace {

double element(const fixtures::SafetensorsEntry& entry, size_t i) {
  uint16_t half;
  switch (entry.dtype) {
    case DType::kF32: {
      float f;
      std::memcpy(&f, entry.data.data() + 4 * i, 4);
      return f;
    }
    case DType::kF16:
      std::memcpy(&half, entry.data.data() + 2 * i, 2);
      return f16_to_f32(half);
    case DType::kBF16:
      std::memcpy(&half, entry.data.data() + 2 * i, 2);
      return bf16_to_f32(half);
    default:
      ADD_FAILURE() << "unexpected dtype in " << entry.name;
      return 0;
  }
}

using Matrix = std::vector<std::vector<double>>;  // [rows][cols]

std::vector<double> matvec(const std::vector<double>& w, size_t rows, size_t cols, const std::vector<double>& x) {
  std::vector<double> y(rows, 0.0);
  for (size_t r = 0; r < rows; ++r)
    for (size_t c = 0; c < cols; ++c) y[r] += w[r * cols + c] * x[c];
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, double eps) {
  double sum = 0;
  for (double v : x) sum += v * v;
  const double scale = 1.0 / std::sqrt(sum / static_cast<double>(x.size()) + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * scale * w[i];
  return y;
}

}  // namespace

ReferenceModel::ReferenceModel(const fixtures::FixtureConfig& config, bool interleaved_rope)
    : config_(config), interleaved_(interleaved_rope) {
  auto tensors = fixtures::make_fixture_tensors(config);
  EXPECT_TRUE(tensors.ok());
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
    static const std::vector<double> empty;
    return empty;
  }
  return it->second;
}

std::vector<double> ReferenceModel::inverse_frequencies() const {
  const int64_t head_dim = config_.hidden_size / config_.num_heads;
  std::vector<double> inv(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) inv[i] = std::pow(config_.rope_theta, -2.0 * i / head_dim);
  if (config_.llama3_rope_scaling) {
    // The fixture's rope_scaling: {llama3, factor 8, low 1, high 4, original max_position / 4},
    // applied per the published llama3 definition.
    const double factor = 8, low = 1, high = 4;
    const double original = static_cast<double>(std::max<int64_t>(1, config_.max_position_embeddings / 4));
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
  }
  return inv;
}

std::vector<std::vector<double>> ReferenceModel::forward(const std::vector<int64_t>& tokens) const {
  const size_t T = tokens.size(), D = config_.hidden_size, F = config_.intermediate_size;
  const size_t Hq = config_.num_heads, Hkv = config_.num_kv_heads, Dh = D / Hq, V = config_.vocab_size;
  const auto inv = inverse_frequencies();
  const bool bias = config_.attention_bias || config_.architecture == "Qwen2ForCausalLM";

  auto rotate = [&](std::vector<double>& head, size_t position) {
    for (size_t i = 0; i < Dh / 2; ++i) {
      const double angle = static_cast<double>(position) * inv[i];
      const double c = std::cos(angle), s = std::sin(angle);
      const size_t a = interleaved_ ? 2 * i : i, b = interleaved_ ? 2 * i + 1 : i + Dh / 2;
      const double x0 = head[a], x1 = head[b];
      head[a] = x0 * c - x1 * s;
      head[b] = x1 * c + x0 * s;
    }
  };

  const auto& embed = weight("model.embed_tokens.weight");
  Matrix x(T, std::vector<double>(D));
  for (size_t t = 0; t < T; ++t)
    for (size_t d = 0; d < D; ++d) x[t][d] = embed[tokens[t] * D + d];

  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    // q, k, v per position, split into heads and rotated.
    std::vector<Matrix> q(T), k(T), v(T);  // [t][head][dh]
    for (size_t t = 0; t < T; ++t) {
      auto h = rms_norm(x[t], weight(p + "input_layernorm.weight"), config_.rms_norm_eps);
      auto qf = matvec(weight(p + "self_attn.q_proj.weight"), Hq * Dh, D, h);
      auto kf = matvec(weight(p + "self_attn.k_proj.weight"), Hkv * Dh, D, h);
      auto vf = matvec(weight(p + "self_attn.v_proj.weight"), Hkv * Dh, D, h);
      if (bias) {
        for (size_t i = 0; i < qf.size(); ++i) qf[i] += weight(p + "self_attn.q_proj.bias")[i];
        for (size_t i = 0; i < kf.size(); ++i) kf[i] += weight(p + "self_attn.k_proj.bias")[i];
        for (size_t i = 0; i < vf.size(); ++i) vf[i] += weight(p + "self_attn.v_proj.bias")[i];
      }
      q[t].assign(Hq, std::vector<double>(Dh));
      k[t].assign(Hkv, std::vector<double>(Dh));
      v[t].assign(Hkv, std::vector<double>(Dh));
      for (size_t h2 = 0; h2 < Hq; ++h2) {
        std::copy_n(qf.begin() + h2 * Dh, Dh, q[t][h2].begin());
        rotate(q[t][h2], t);
      }
      for (size_t h2 = 0; h2 < Hkv; ++h2) {
        std::copy_n(kf.begin() + h2 * Dh, Dh, k[t][h2].begin());
        rotate(k[t][h2], t);
        std::copy_n(vf.begin() + h2 * Dh, Dh, v[t][h2].begin());
      }
    }
    for (size_t t = 0; t < T; ++t) {
      std::vector<double> merged(Hq * Dh, 0.0);
      for (size_t h2 = 0; h2 < Hq; ++h2) {
        const size_t kv = h2 / (Hq / Hkv);
        std::vector<double> scores(t + 1);
        double best = -INFINITY;
        for (size_t s = 0; s <= t; ++s) {
          double dot = 0;
          for (size_t d = 0; d < Dh; ++d) dot += q[t][h2][d] * k[s][kv][d];
          scores[s] = dot / std::sqrt(static_cast<double>(Dh));
          best = std::max(best, scores[s]);
        }
        double total = 0;
        for (double& score : scores) total += (score = std::exp(score - best));
        for (size_t s = 0; s <= t; ++s)
          for (size_t d = 0; d < Dh; ++d) merged[h2 * Dh + d] += scores[s] / total * v[s][kv][d];
      }
      auto o = matvec(weight(p + "self_attn.o_proj.weight"), D, Hq * Dh, merged);
      for (size_t d = 0; d < D; ++d) x[t][d] += o[d];
      auto h = rms_norm(x[t], weight(p + "post_attention_layernorm.weight"), config_.rms_norm_eps);
      auto gate = matvec(weight(p + "mlp.gate_proj.weight"), F, D, h);
      auto up = matvec(weight(p + "mlp.up_proj.weight"), F, D, h);
      for (size_t i = 0; i < F; ++i) gate[i] = gate[i] / (1 + std::exp(-gate[i])) * up[i];
      auto down = matvec(weight(p + "mlp.down_proj.weight"), D, F, gate);
      for (size_t d = 0; d < D; ++d) x[t][d] += down[d];
    }
  }
  const auto& head = weight(config_.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight");
  std::vector<std::vector<double>> logits(T);
  for (size_t t = 0; t < T; ++t)
    logits[t] = matvec(head, V, D, rms_norm(x[t], weight("model.norm.weight"), config_.rms_norm_eps));
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

}  // namespace kestrel::testing
