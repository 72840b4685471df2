#include "kestrel/llm/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kestrel/core/error_helpers.h"

namespace kestrel::llm {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

SamplerConfig clamped(SamplerConfig c) {
  if (!std::isfinite(c.temperature) || c.temperature < 0) c.temperature = 0;
  c.top_k = std::max(c.top_k, 0);
  if (!(c.top_p > 0)) c.top_p = std::numeric_limits<float>::min();
  if (!(c.top_p <= 1)) c.top_p = 1;
  if (!(c.min_p >= 0)) c.min_p = 0;
  if (!(c.min_p <= 1)) c.min_p = 1;
  if (!std::isfinite(c.repetition_penalty) || c.repetition_penalty <= 0) c.repetition_penalty = 1;
  c.repetition_last_n = std::max(c.repetition_last_n, -1);
  return c;
}

}  // namespace

Status SamplerConfig::validate() const {
  if (!std::isfinite(temperature) || temperature < 0) {
    return make_error(ErrorCode::kInvalidArgument, "sampler: temperature {} must be finite and >= 0 (0 = greedy)",
                      temperature);
  }
  if (top_k < 0) return make_error(ErrorCode::kInvalidArgument, "sampler: top_k {} must be >= 0 (0 = off)", top_k);
  if (!(top_p > 0 && top_p <= 1)) {
    return make_error(ErrorCode::kInvalidArgument, "sampler: top_p {} must be in (0, 1] (1 = off)", top_p);
  }
  if (!(min_p >= 0 && min_p <= 1)) {
    return make_error(ErrorCode::kInvalidArgument, "sampler: min_p {} must be in [0, 1] (0 = off)", min_p);
  }
  if (!std::isfinite(repetition_penalty) || repetition_penalty <= 0) {
    return make_error(ErrorCode::kInvalidArgument, "sampler: repetition_penalty {} must be finite and > 0 (1 = off)",
                      repetition_penalty);
  }
  if (repetition_last_n < -1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "sampler: repetition_last_n {} must be >= -1 (0 = off, -1 = whole history)", repetition_last_n);
  }
  return ok_status();
}

SamplerConfig greedy_sampler_config() {
  SamplerConfig config;
  config.temperature = 0;
  config.top_k = 0;
  config.top_p = 1;
  config.min_p = 0;
  return config;
}

Sampler::Sampler(SamplerConfig config) : config_(clamped(config)) { reseed(config_.seed); }

void Sampler::reseed(uint64_t seed) {
  config_.seed = seed;
  uint64_t x = seed;
  for (uint64_t& s : state_) s = splitmix64(x);
}

double Sampler::next_uniform() {
  // xoshiro256**
  const uint64_t result = rotl(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotl(state_[3], 45);
  return static_cast<double>(result >> 11) * 0x1.0p-53;
}

int64_t Sampler::sample(std::span<const float> logits, std::span<const int64_t> history) {
  const size_t n = logits.size();
  if (n == 0) return -1;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  std::vector<float>& l = scratch_logits_;
  l.resize(n);
  for (size_t i = 0; i < n; ++i) l[i] = std::isnan(logits[i]) ? kNegInf : logits[i];

  // Repetition penalty, once per distinct token of the window.
  if (config_.repetition_penalty != 1.0f && config_.repetition_last_n != 0 && !history.empty()) {
    size_t window = history.size();
    if (config_.repetition_last_n > 0) window = std::min(window, static_cast<size_t>(config_.repetition_last_n));
    std::vector<int64_t> seen(history.end() - static_cast<std::ptrdiff_t>(window), history.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int64_t id : seen) {
      if (id < 0 || static_cast<size_t>(id) >= n) continue;
      float& v = l[static_cast<size_t>(id)];
      v = v > 0 ? v / config_.repetition_penalty : v * config_.repetition_penalty;
    }
  }

  if (config_.temperature == 0) {
    size_t best = 0;
    for (size_t i = 1; i < n; ++i) {
      if (l[i] > l[best]) best = i;
    }
    return static_cast<int64_t>(best);
  }

  // Candidates, best first (ties: lower id first) whenever an order-dependent filter is on.
  std::vector<int32_t>& ids = scratch_ids_;
  ids.resize(n);
  for (size_t i = 0; i < n; ++i) ids[i] = static_cast<int32_t>(i);
  const auto better = [&](int32_t a, int32_t b) {
    if (l[a] != l[b]) return l[a] > l[b];
    return a < b;
  };
  const double inv_t = 1.0 / static_cast<double>(config_.temperature);
  std::vector<double>& p = scratch_probs_;  // weights exp((l - max) / T) of ids[0..count), in that order
  size_t count = n;
  double total = 0;  // weight of the softmax set (after top-k, before top-p and min-p)

  if (config_.top_k > 0 && static_cast<size_t>(config_.top_k) < n) {
    count = static_cast<size_t>(config_.top_k);
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(count), ids.end(), better);
    const double max_logit = l[ids[0]];
    if (l[ids[0]] == kNegInf) return ids[0];
    p.resize(count);
    for (size_t i = 0; i < count; ++i) {
      p[i] = std::exp((static_cast<double>(l[ids[i]]) - max_logit) * inv_t);
      total += p[i];
    }
  } else {
    const int32_t best = *std::min_element(ids.begin(), ids.end(), better);
    if (l[best] == kNegInf) return best;
    const double max_logit = l[best];
    std::vector<double>& w = scratch_weights_;  // by token id
    w.resize(n);
    for (size_t i = 0; i < n; ++i) {
      w[i] = std::exp((static_cast<double>(l[i]) - max_logit) * inv_t);
      total += w[i];
    }
    if (config_.top_p < 1 || config_.min_p > 0) {
      // Only a best-first prefix can survive, so sort as little as possible: min-p is a
      // threshold on the weight (p / p_max = w), applied here before sorting; top-p needs the
      // best tokens until their weight reaches top_p * total.
      size_t m = n;
      if (config_.min_p > 0) {
        m = 0;
        for (size_t i = 0; i < n; ++i) {
          if (w[i] >= static_cast<double>(config_.min_p)) ids[m++] = static_cast<int32_t>(i);
        }
      }
      size_t k = m;
      if (config_.top_p < 1) {
        const double target = static_cast<double>(config_.top_p) * total;
        k = std::min<size_t>(m, 256);
        while (true) {
          std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k),
                            ids.begin() + static_cast<std::ptrdiff_t>(m), better);
          double mass = 0;
          for (size_t i = 0; i < k; ++i) mass += w[ids[i]];
          if (mass >= target || k == m) break;
          k = std::min(m, k * 4);
        }
      } else {
        std::sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(m), better);
      }
      count = k;
    }
    p.resize(count);
    for (size_t i = 0; i < count; ++i) p[i] = w[ids[i]];
  }

  if (config_.top_p < 1) {
    // Smallest best-first prefix whose weight reaches top_p of the softmax set.
    const double target = static_cast<double>(config_.top_p) * total;
    double cumulative = 0;
    size_t keep = count;
    for (size_t i = 0; i < count; ++i) {
      cumulative += p[i];
      if (cumulative >= target) {
        keep = i + 1;
        break;
      }
    }
    count = keep;
  }
  if (config_.min_p > 0) {
    // p[0] is the largest; the list is sorted, so the kept tokens are a prefix.
    const double threshold = static_cast<double>(config_.min_p) * p[0];
    size_t keep = 1;
    while (keep < count && p[keep] >= threshold) ++keep;
    count = keep;
  }
  double kept = 0;
  for (size_t i = 0; i < count; ++i) kept += p[i];

  const double u = next_uniform() * kept;
  double cumulative = 0;
  for (size_t i = 0; i < count; ++i) {
    cumulative += p[i];
    if (u < cumulative) return ids[i];
  }
  return ids[count - 1];
}

}  // namespace kestrel::llm
