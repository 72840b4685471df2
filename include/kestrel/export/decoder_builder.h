// Builds the static-shape decoder graph of one method (T tokens per call) from a checkpoint.
// I/O follows the hf_static v1 contract: tokens, positions, then per layer k/v caches in;
// logits, then per layer new k/v slices out.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

struct DecoderOptions {
  int64_t step = 1;          // tokens per call (T)
  int64_t max_context = 256; // cache length (C)
  DType weight_dtype = DType::kF32;  // matrices and embedding; norms and biases stay f32
  std::string logits = "last";       // "last": logits of the final token only; "all": every token
};

// Converted weights shared between the methods built from one checkpoint, so prefill and decode
// reference the same bytes (and the program stores them once).
class WeightCache {
 public:
  WeightCache(const Checkpoint& checkpoint, DType matrix_dtype)
      : checkpoint_(checkpoint), matrix_dtype_(matrix_dtype) {}
  // The tensor in `dtype`: a view into the mapped checkpoint when no conversion is needed.
  Result<std::shared_ptr<const ConstantData>> get(const std::string& name, DType dtype);
  // Rows [begin, begin + count) of a tensor (its first dimension), in `dtype`: the parts of a
  // fused projection.
  Result<std::shared_ptr<const ConstantData>> get_rows(const std::string& name, int64_t begin, int64_t count,
                                                       DType dtype);
  // An RMSNorm weight in f32, as 1 + weight when `plus_one` (Gemma's norms).
  Result<std::shared_ptr<const ConstantData>> get_norm(const std::string& name, bool plus_one);
  DType matrix_dtype() const { return matrix_dtype_; }
  const Checkpoint& checkpoint() const { return checkpoint_; }

 private:
  using Key = std::tuple<std::string, int64_t, int64_t, DType, bool>;  // name, rows, dtype, plus one
  Result<std::shared_ptr<const ConstantData>> convert(const CheckpointTensor& tensor, DType dtype);

  const Checkpoint& checkpoint_;
  DType matrix_dtype_;
  std::map<Key, std::shared_ptr<const ConstantData>> cache_;
};

Result<Graph> build_decoder_graph(WeightCache& weights, const DecoderOptions& options);

}  // namespace kestrel::exporter
