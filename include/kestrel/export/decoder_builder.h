// Builds the static-shape decoder graph of one method (T tokens per call) from a checkpoint.
// I/O follows the hf_static v1 contract: tokens, positions, then per layer k/v caches in;
// logits, then per layer new k/v slices out.
#pragma once

#include <string>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/weight_cache.h"

namespace kestrel::exporter {

struct DecoderOptions {
  int64_t step = 1;          // tokens per call (T)
  int64_t max_context = 256; // cache length (C)
  DType weight_dtype = DType::kF32;  // matrices and embedding; norms and biases stay f32
  std::string logits = "last";       // "last": logits of the final token only; "all": every token
  DType cache_dtype = DType::kF32;   // caches and new k/v slices: f32, or f16 (cast as stored)
};

Result<Graph> build_decoder_graph(WeightCache& weights, const DecoderOptions& options);

}  // namespace kestrel::exporter
