// Rotary-embedding tables folded at export time, so kernels and backends see plain tables
// whatever scaling the checkpoint asks for (linear, llama3, longrope with its attention factor).
#pragma once

#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"

namespace kestrel::exporter {

// Which of a config's rotary embeddings: the full-attention layers' (rope_theta with
// rope_scaling) or the sliding layers' own (local_rope_theta, unscaled; Gemma 3).
enum class RopeKind { kGlobal, kLocal };

// Inverse frequencies of the rotary_dim/2 rotation pairs with the scaling applied. longrope
// picks its long factors when `context` exceeds original_max_position_embeddings, else its
// short ones (transformers picks by the current sequence length; a static program by the
// context it is exported for).
Result<std::vector<double>> rope_inverse_frequencies(const ModelConfig& config, int64_t context,
                                                     RopeKind kind = RopeKind::kGlobal);

// The factor cos and sin are multiplied by (longrope's attention factor; 1 otherwise).
double rope_attention_factor(const ModelConfig& config, RopeKind kind = RopeKind::kGlobal);

struct RopeTables {
  std::vector<float> cos;  // [positions, rotary_dim / 2]
  std::vector<float> sin;
};
Result<RopeTables> make_rope_tables(const ModelConfig& config, int64_t positions, RopeKind kind = RopeKind::kGlobal);

}  // namespace kestrel::exporter
