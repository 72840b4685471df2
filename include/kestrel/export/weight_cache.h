// The weights of one checkpoint as program constants, shared between the methods built from it so
// prefill and decode reference the same bytes (and the program stores them once).
//
// Nothing is converted up front: each constant is a recipe over the mapped checkpoint (its bytes
// as they are, or converted to another float dtype, quantized to q8, or folded to 1 + w) that runs
// while the program is written, a chunk of rows at a time, and drops the checkpoint pages it has
// read. An export's resident memory is then a few chunks, whatever the checkpoint's size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

class WeightCache {
 public:
  // Source bytes converted per step (whole rows, at least one): small against a real tensor, large
  // enough that the per-step overhead (an allocation, a write, an madvise) does not show.
  static constexpr size_t kDefaultChunkBytes = size_t{1} << 20;

  WeightCache(const Checkpoint& checkpoint, DType matrix_dtype, size_t chunk_bytes = kDefaultChunkBytes)
      : checkpoint_(checkpoint), matrix_dtype_(matrix_dtype), chunk_bytes_(chunk_bytes) {}
  // The tensor in `dtype` (f32, f16, bf16, or q8 for a matrix whose columns are a multiple of
  // the q8 block). Errors (a missing tensor, a conversion that cannot be done) are reported here,
  // before anything is written.
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
  Result<std::shared_ptr<const ConstantData>> recipe(const CheckpointTensor& tensor, DType dtype, bool plus_one);

  const Checkpoint& checkpoint_;
  DType matrix_dtype_;
  size_t chunk_bytes_;
  std::map<Key, std::shared_ptr<const ConstantData>> cache_;
};

}  // namespace kestrel::exporter
