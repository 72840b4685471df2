// The export pipeline: checkpoint -> hf_static v1 program with a prefill and a decode method
// that share one copy of the weights.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/pass_manager.h"
#include "kestrel/program/spec.h"

namespace kestrel::exporter {

struct ExportOptions {
  int64_t prefill_step = 32;
  // More prefill methods ("prefill_S", one per step S): a runner sends each full chunk of a
  // prompt through the largest step that fits (docs/hf_static-v1.md, "Prefill buckets").
  std::vector<int64_t> extra_prefill_steps;
  int64_t max_context = 0;  // 0: the checkpoint's max_position_embeddings, capped at 1024
  DType dtype = DType::kF32;
  // The KV caches' element type: f32 (exact), or f16 (half the cache memory and the attention
  // reads of a decode step; keys and values are rounded to f16 as they are stored).
  DType cache_dtype = DType::kF32;
  std::string logits = "last";
  // Run on every method graph before the partitioners' edge transforms.
  std::vector<std::shared_ptr<Pass>> passes;
  // After partitioning, rope and attention left to the CPU read q and write their output in the
  // projections' [B, T, H, Dh] layout, without the transposes around them, and the transposes
  // of k and v to an f16 cache take the cast's pass (fold_head_transposes: the same values,
  // fewer passes over each layer's activations).
  bool fold_head_transposes = true;
  // After partitioning, a gated MLP's silu(gate) * up left to the CPU becomes one silu_mul
  // (fuse_silu_mul: the same values, one pass over the MLP's activations fewer).
  bool fuse_silu_mul = true;
  std::vector<std::shared_ptr<const Partitioner>> partitioners;
  // Called with a line of progress for each stage (may be empty).
  std::function<void(const std::string&)> progress;
};

struct MethodReport {
  std::string name;
  int64_t step = 0;
  uint64_t arena_bytes = 0;
  size_t instructions = 0;
  PipelineReport pipeline;
};

struct ExportReport {
  std::vector<MethodReport> methods;
  uint64_t constant_bytes = 0;
  size_t constants = 0;
  int64_t max_context = 0;
  std::string tokenizer_format;  // "hf_json", "llama2c" or "none" (the program then takes token ids)
};

// Where one node of a method graph (before partitioning) runs.
struct NodePlacement {
  NodeId id = -1;
  std::string op;
  std::string output;     // its first output's name
  std::string backend;    // the backend it was delegated to; empty when it stays portable
  int partition = -1;     // that backend's partition index
  std::string reason;     // why it stays portable
};
// Every node the partitioners saw, in graph order: delegated by the first partitioner that took
// it, otherwise portable with the last partitioner's reason. Empty without partitioners.
std::vector<NodePlacement> node_placements(const PipelineReport& pipeline);
// Program metadata key holding a method's placements (written when the export partitions), one
// "id<TAB>op<TAB>output<TAB>placement" string per node; placement is "<backend>:<partition>" or
// "portable: <reason>". `kestrel inspect` prints it.
std::string node_placements_key(const std::string& method);

Result<program::ProgramSpec> export_program(const Checkpoint& checkpoint, const ExportOptions& options,
                                            ExportReport* report = nullptr);

}  // namespace kestrel::exporter
