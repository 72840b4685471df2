#include "kestrel/export/rope_tables.h"

#include <cmath>
#include <numbers>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

Result<std::vector<double>> rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t head_dim = config.head_dim;
  if (head_dim <= 0 || head_dim % 2 != 0)
    return make_error(ErrorCode::kInvalidArgument, "rope needs an even head_dim, got {}", head_dim);
  std::vector<double> inverse(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i)
    inverse[i] = 1.0 / std::pow(config.rope_theta, static_cast<double>(2 * i) / static_cast<double>(head_dim));

  const RopeScaling& scaling = config.rope_scaling;
  if (scaling.type == "none" || scaling.type.empty() || scaling.type == "default") return inverse;
  if (scaling.factor <= 0)
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
  return make_error(ErrorCode::kUnsupported, "rope_scaling type '{}' is not supported (none, linear, llama3)",
                    scaling.type);
}

Result<RopeTables> make_rope_tables(const ModelConfig& config, int64_t positions) {
  KESTREL_ASSIGN_OR_RETURN(auto inverse, rope_inverse_frequencies(config));
  const size_t half = inverse.size();
  RopeTables tables;
  tables.cos.resize(positions * half);
  tables.sin.resize(positions * half);
  for (int64_t p = 0; p < positions; ++p)
    for (size_t i = 0; i < half; ++i) {
      const double angle = static_cast<double>(p) * inverse[i];
      tables.cos[p * half + i] = static_cast<float>(std::cos(angle));
      tables.sin[p * half + i] = static_cast<float>(std::sin(angle));
    }
  return tables;
}

}  // namespace kestrel::exporter
