#include "kestrel/export/rope_tables.h"

#include <cmath>
#include <numbers>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

int64_t rotary_dims(const ModelConfig& config) { return config.rotary_dim > 0 ? config.rotary_dim : config.head_dim; }

}  // namespace

Result<std::vector<double>> rope_inverse_frequencies(const ModelConfig& config, int64_t context, RopeKind kind) {
  const int64_t dim = rotary_dims(config);
  if (dim <= 0 || dim % 2 != 0 || dim > config.head_dim)
    return make_error(ErrorCode::kInvalidArgument, "rope needs an even rotary dim within head_dim {}, got {}",
                      config.head_dim, dim);
  const bool local = kind == RopeKind::kLocal;
  const double theta = local ? config.local_rope_theta : config.rope_theta;
  if (!(theta > 0)) return make_error(ErrorCode::kInvalidArgument, "rope theta must be positive, got {}", theta);
  std::vector<double> inverse(dim / 2);
  for (int64_t i = 0; i < dim / 2; ++i)
    inverse[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(dim));

  const RopeScaling& scaling = config.rope_scaling;
  if (local || scaling.type == "none" || scaling.type.empty() || scaling.type == "default") return inverse;
  if (!(scaling.factor > 0))
    return make_error(ErrorCode::kInvalidArgument, "rope_scaling.factor must be positive, got {}", scaling.factor);
  if (scaling.type == "linear") {
    for (double& f : inverse) f /= scaling.factor;
    return inverse;
  }
  if (scaling.type == "llama3") {
    // Long wavelengths are slowed by `factor`, short ones kept, the band between blended.
    const double original = static_cast<double>(scaling.original_max_position_embeddings);
    const double low_wavelen = original / scaling.low_freq_factor;
    const double high_wavelen = original / scaling.high_freq_factor;
    for (double& f : inverse) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen < high_wavelen) continue;
      if (wavelen > low_wavelen) {
        f /= scaling.factor;
        continue;
      }
      const double smooth = (original / wavelen - scaling.low_freq_factor) /
                            (scaling.high_freq_factor - scaling.low_freq_factor);
      f = (1 - smooth) * f / scaling.factor + smooth * f;
    }
    return inverse;
  }
  if (scaling.type == "longrope") {
    const bool long_context = context > scaling.original_max_position_embeddings;
    const std::vector<double>& factors = long_context ? scaling.long_factor : scaling.short_factor;
    if (factors.size() != inverse.size())
      return make_error(ErrorCode::kInvalidArgument, "longrope needs {} {} factors, got {}", inverse.size(),
                        long_context ? "long" : "short", factors.size());
    for (size_t i = 0; i < inverse.size(); ++i) inverse[i] /= factors[i];
    return inverse;
  }
  return make_error(ErrorCode::kUnsupported, "rope_scaling type '{}' is not supported (none, linear, llama3, longrope)",
                    scaling.type);
}

double rope_attention_factor(const ModelConfig& config, RopeKind kind) {
  const RopeScaling& scaling = config.rope_scaling;
  if (kind == RopeKind::kLocal || scaling.type != "longrope") return 1.0;
  if (scaling.attention_factor) return *scaling.attention_factor;
  if (scaling.factor <= 1.0) return 1.0;
  return std::sqrt(1 + std::log(scaling.factor) /
                           std::log(static_cast<double>(scaling.original_max_position_embeddings)));
}

Result<RopeTables> make_rope_tables(const ModelConfig& config, int64_t positions, RopeKind kind) {
  KESTREL_ASSIGN_OR_RETURN(auto inverse, rope_inverse_frequencies(config, positions, kind));
  const double magnitude = rope_attention_factor(config, kind);
  const size_t half = inverse.size();
  RopeTables tables;
  tables.cos.resize(positions * half);
  tables.sin.resize(positions * half);
  for (int64_t p = 0; p < positions; ++p)
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inverse[i];
      tables.cos[p * half + i] = static_cast<float>(magnitude * std::cos(angle));
      tables.sin[p * half + i] = static_cast<float>(magnitude * std::sin(angle));
    }
  return tables;
}

}  // namespace kestrel::exporter
