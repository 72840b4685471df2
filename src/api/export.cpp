#include "kestrel/api/export.h"

#include <fmt/format.h>

#include "kestrel/api/export_inputs.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/program/io_contract.h"
#include "kestrel/program/writer.h"

namespace kestrel::api {

Result<DType> parse_weight_dtype(const std::string& name) {
  auto dtype = dtype_from_name(name);
  if (!dtype || (!dtype_is_float(*dtype) && *dtype != DType::kQ8))
    return make_error(ErrorCode::kInvalidArgument, "weight dtype must be f32, f16, bf16 or q8, got '{}'", name);
  return *dtype;
}

Result<DType> parse_cache_dtype(const std::string& name) {
  auto dtype = dtype_from_name(name);
  if (!dtype || !contract::hf_static::is_cache_dtype(*dtype))
    return make_error(ErrorCode::kInvalidArgument, "cache dtype must be f32 or f16, got '{}'", name);
  return *dtype;
}

Result<exporter::ExportReport> export_checkpoint(const ExportRequest& request) {
  auto progress = [&](const std::string& line) {
    if (request.progress) request.progress(line);
  };
  if (request.checkpoint.empty() || request.output.empty())
    return make_error(ErrorCode::kInvalidArgument, "export needs a checkpoint and an output program path");
  if (!request.backend && !request.backend_options.empty())
    return make_error(ErrorCode::kInvalidArgument, "backend options need a backend");
  KESTREL_RETURN_IF_ERROR(refuse_overwriting_inputs(request.output, {request.checkpoint, request.tokenizer}));

  exporter::ExportOptions options;
  options.prefill_step = request.prefill_step;
  options.extra_prefill_steps = request.extra_prefill_steps;
  options.max_context = request.max_context;
  options.logits = request.logits;
  options.dtype = request.dtype;
  options.cache_dtype = request.cache_dtype;
  options.progress = progress;
  if (request.backend) {
    KESTREL_ASSIGN_OR_RETURN(auto partitioner,
                             exporter::Partitioner::from_options(request.backend, request.backend_options));
    options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(partitioner)));
  }

  progress(fmt::format("loading checkpoint {}", request.checkpoint));
  exporter::CheckpointOptions checkpoint_options;
  checkpoint_options.tokenizer_path = request.tokenizer;
  KESTREL_ASSIGN_OR_RETURN(auto checkpoint, exporter::load_checkpoint(request.checkpoint, checkpoint_options));
  const auto& config = checkpoint.config();
  progress(fmt::format("architecture {}: {} layers, hidden {}, {} heads ({} kv, head_dim {}), vocab {}",
                       config.architecture, config.num_layers, config.hidden_size, config.num_heads,
                       config.num_kv_heads, config.head_dim, config.vocab_size));

  exporter::ExportReport report;
  KESTREL_ASSIGN_OR_RETURN(auto program, exporter::export_program(checkpoint, options, &report));
  progress(fmt::format("writing {}", request.output));
  program::WriteOptions write_options;
  write_options.progress = request.write_progress;
  KESTREL_RETURN_IF_ERROR(program::write_program(program, request.output, write_options));
  return report;
}

}  // namespace kestrel::api
