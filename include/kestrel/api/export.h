// One export, checkpoint path -> program file, as `kestrel export` and the Python module run
// it: partitioner set-up from backend options, checkpoint loading, export and writing.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/export/exporter.h"
#include "kestrel/export/partitioner.h"

namespace kestrel::api {

struct ExportRequest {
  std::string checkpoint;  // HF directory or llama2.c .bin
  std::string output;      // program file to write
  // Null: nothing is delegated. Otherwise backend_options go through the backend's option
  // table (exporter::Partitioner::from_options): unknown names and wrong types are errors.
  std::shared_ptr<const exporter::BackendExporter> backend;
  exporter::OptionMap backend_options;
  int64_t prefill_step = 32;
  std::vector<int64_t> extra_prefill_steps;  // more prefill methods, one per step (buckets)
  int64_t max_context = 0;  // 0: the checkpoint's, capped at 1024
  DType dtype = DType::kF32;
  DType cache_dtype = DType::kF32;  // KV caches: f32 or f16
  std::string logits = "last";
  std::string tokenizer;  // llama2.c tokenizer.bin (for .bin checkpoints)
  std::function<void(const std::string&)> progress;  // one line per stage (may be empty)
  // Bytes written so far and the file's size, as the program reaches the file (may be empty).
  std::function<void(uint64_t written, uint64_t total)> write_progress;
};

// The weight dtypes a program can hold: f32, f16, bf16 or q8.
Result<DType> parse_weight_dtype(const std::string& name);
// The KV cache dtypes a program can use: f32 or f16.
Result<DType> parse_cache_dtype(const std::string& name);

// Refuses an output that is one of the files it reads (the checkpoint, the tokenizer) before
// reading anything (refuse_overwriting_inputs).
Result<exporter::ExportReport> export_checkpoint(const ExportRequest& request);

}  // namespace kestrel::api
