// Rotary-embedding tables folded at export time, so kernels and backends see plain tables
// whatever scaling the checkpoint asks for.
#pragma once

#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"

namespace kestrel::exporter {

// Inverse frequencies for head_dim/2 rotation pairs, with the config's rope_scaling applied.
Result<std::vector<double>> rope_inverse_frequencies(const ModelConfig& config);

struct RopeTables {
  std::vector<float> cos;  // [positions, head_dim / 2]
  std::vector<float> sin;
};
Result<RopeTables> make_rope_tables(const ModelConfig& config, int64_t positions);

}  // namespace kestrel::exporter
