#include "kestrel/export/exporter.h"

#include <algorithm>
#include <map>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/constant_table.h"
#include "kestrel/export/decoder_builder.h"
#include "kestrel/export/gated_mlp.h"
#include "kestrel/export/head_layout.h"
#include "kestrel/export/memory_planner.h"
#include "kestrel/export/program_emitter.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::exporter {

namespace {

namespace keys = contract::hf_static;

struct PlannedMethod {
  std::string name;
  int64_t step;
  Graph graph;
  MemoryPlan plan;
  PipelineReport pipeline;
};

// Whether `method` writes every new k/v slice into its cache input itself: for cache input i
// (input 2 + i) a kernel-run index_copy along the time axis takes that input, the positions
// input and the matching k_new/v_new output (output 1 + i), and its result is an alias of the
// cache. A delegated update is not counted: whether a backend writes in place is its own affair.
bool updates_caches_in_place(const program::MethodSpec& method, size_t caches) {
  auto root = [&](int32_t index) {
    for (size_t depth = 0; depth < method.values.size() && method.values[index].kind == program::ValueKind::kAlias; ++depth)
      index = method.values[index].alias_of;
    return index;
  };
  if (method.inputs.size() != 2 + caches || method.outputs.size() != 1 + caches) return false;
  for (size_t i = 0; i < caches; ++i) {
    const int32_t cache = method.inputs[2 + i];
    bool found = false;
    for (const auto& instruction : method.instructions) {
      const auto* call = std::get_if<program::KernelCall>(&instruction);
      if (call == nullptr || call->op != "index_copy" || call->inputs.size() != 3 || call->outputs.size() != 1) continue;
      const auto axis = call->attrs.find("axis");
      found = call->inputs[0] == cache && call->inputs[1] == method.inputs[1] &&
              call->inputs[2] == method.outputs[1 + i] && root(call->outputs[0]) == cache &&
              axis != call->attrs.end() && axis->second == program::AttrValue(int64_t{2});
      if (found) break;
    }
    if (!found) return false;
  }
  return true;
}

std::string tokenizer_format_name(TokenizerFormat format) {
  switch (format) {
    case TokenizerFormat::kHfJson: return "hf_json";
    case TokenizerFormat::kLlama2c: return "llama2c";
    default: return "none";
  }
}

}  // namespace

std::vector<NodePlacement> node_placements(const PipelineReport& pipeline) {
  std::vector<NodePlacement> placements;
  std::map<NodeId, size_t> index;
  for (const PartitionReport& partition : pipeline.partitions) {
    for (const NodeDecision& node : partition.nodes) {
      if (node.op == "delegate") continue;  // an earlier partitioner's delegate
      auto [it, added] = index.emplace(node.id, placements.size());
      if (added) {
        NodePlacement fresh;
        fresh.id = node.id;
        fresh.op = node.op;
        fresh.output = node.output;
        placements.push_back(std::move(fresh));
      }
      NodePlacement& placement = placements[it->second];
      if (!placement.backend.empty()) continue;
      if (node.partition >= 0) {
        placement.backend = partition.backend;
        placement.partition = node.partition;
        placement.reason.clear();
      } else {
        placement.reason = node.reason;
      }
    }
  }
  return placements;
}

std::string node_placements_key(const std::string& method) { return "nodes." + method; }

Result<program::ProgramSpec> export_program(const Checkpoint& checkpoint, const ExportOptions& options,
                                            ExportReport* report) {
  const ModelConfig& config = checkpoint.config();
  auto progress = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  if (!dtype_is_float(options.dtype) && options.dtype != DType::kQ8)
    return make_error(ErrorCode::kInvalidArgument, "--dtype must be f32, f16, bf16 or q8, got {}",
                      dtype_name(options.dtype));
  if (!keys::is_cache_dtype(options.cache_dtype))
    return make_error(ErrorCode::kInvalidArgument, "--cache-dtype must be f32 or f16, got {}",
                      dtype_name(options.cache_dtype));
  if (options.max_context < 0)
    return make_error(ErrorCode::kInvalidArgument, "max context must be >= 1 (or 0 for the default), got {}",
                      options.max_context);
  const int64_t max_context =
      options.max_context > 0 ? options.max_context : std::min<int64_t>(config.max_position_embeddings, 1024);
  if (options.prefill_step < 1)
    return make_error(ErrorCode::kInvalidArgument, "prefill step must be >= 1, got {}", options.prefill_step);
  if (options.prefill_step > max_context)
    return make_error(ErrorCode::kInvalidArgument, "prefill step ({}) exceeds max context ({})", options.prefill_step,
                      max_context);
  std::vector<std::pair<std::string, int64_t>> method_steps{{"prefill", options.prefill_step}};
  std::vector<int64_t> extra_steps = options.extra_prefill_steps;
  std::sort(extra_steps.begin(), extra_steps.end());
  for (int64_t step : extra_steps) {
    if (step < 2 || step > max_context)
      return make_error(ErrorCode::kInvalidArgument, "extra prefill step {} is outside [2, max context = {}]", step,
                        max_context);
    const bool repeated = std::any_of(method_steps.begin(), method_steps.end(),
                                      [&](const auto& method) { return method.second == step; });
    if (repeated) return make_error(ErrorCode::kInvalidArgument, "prefill step {} is given twice", step);
    method_steps.emplace_back(fmt::format("prefill_{}", step), step);
  }
  method_steps.emplace_back("decode", 1);
  if (config.max_position_embeddings > 0 && max_context > config.max_position_embeddings)
    return make_error(ErrorCode::kInvalidArgument,
                      "max context ({}) exceeds the model's max_position_embeddings ({})", max_context,
                      config.max_position_embeddings);

  WeightCache weights(checkpoint, options.dtype);
  ConstantTable constants;
  std::vector<PlannedMethod> methods;
  for (const auto& [name, step] : method_steps) {
    progress(fmt::format("building '{}' (T={}, context {})", name, step, max_context));
    DecoderOptions decoder{step, max_context, options.dtype, options.logits, options.cache_dtype};
    auto graph = build_decoder_graph(weights, decoder);
    if (!graph.ok()) return graph.error().with_context(fmt::format("building method '{}'", name));
    PassManager passes;
    for (const auto& pass : options.passes) passes.add_pass(pass);
    for (const auto& partitioner : options.partitioners) passes.add_partitioner(partitioner);
    auto pipeline = passes.run(*graph);
    if (!pipeline.ok()) return pipeline.error().with_context(fmt::format("method '{}'", name));
    if (options.fold_head_transposes) {
      auto folded = fold_head_transposes(*graph);
      if (!folded.ok()) return folded.error().with_context(fmt::format("folding the head transposes of '{}'", name));
    }
    if (options.fuse_silu_mul) {
      auto fused = fuse_silu_mul(*graph);
      if (!fused.ok()) return fused.error().with_context(fmt::format("fusing the gated MLPs of '{}'", name));
    }
    KESTREL_RETURN_IF_ERROR(lift_constants(*graph, constants));
    auto plan = plan_memory(*graph);
    if (!plan.ok()) return plan.error().with_context(fmt::format("planning memory of '{}'", name));
    methods.push_back(PlannedMethod{name, step, std::move(graph).value(), std::move(plan).value(),
                                    std::move(pipeline).value()});
  }

  progress(fmt::format("packing {} constants", constants.entries().size()));
  program::ProgramSpec program;
  ProgramEmitter emitter;
  KESTREL_RETURN_IF_ERROR(emitter.add_constants(constants, program));
  if (report != nullptr) {
    report->constants = constants.entries().size();
    report->constant_bytes = program.segments.front().size();
    report->max_context = max_context;
    report->tokenizer_format = tokenizer_format_name(checkpoint.tokenizer_format());
  }
  for (PlannedMethod& planned : methods) {
    KESTREL_ASSIGN_OR_RETURN(auto method, emitter.emit_method(planned.name, planned.graph, planned.plan, program));
    if (!options.partitioners.empty()) {
      std::vector<std::string> lines;
      for (const NodePlacement& node : node_placements(planned.pipeline))
        lines.push_back(fmt::format("{}\t{}\t{}\t{}", node.id, node.op, node.output,
                                    node.backend.empty() ? "portable: " + node.reason
                                                         : fmt::format("{}:{}", node.backend, node.partition)));
      program.metadata[node_placements_key(planned.name)] = std::move(lines);
    }
    if (report != nullptr)
      report->methods.push_back(MethodReport{planned.name, planned.step, method.arena_bytes,
                                             method.instructions.size(), planned.pipeline});
    program.methods.push_back(std::move(method));
  }

  auto& meta = program.metadata;
  meta[contract::kIoContract] = std::string(keys::kName);
  meta[contract::kIoContractVersion] = int64_t{keys::kVersion};
  meta[keys::kPrefillMethod] = std::string("prefill");
  meta[keys::kDecodeMethod] = std::string("decode");
  meta[keys::kPrefillStep] = options.prefill_step;
  if (!options.extra_prefill_steps.empty()) {
    std::vector<int64_t> steps;
    for (const auto& [name, step] : method_steps) {
      if (step == 1 && name == "decode") continue;
      steps.push_back(step);
      if (name != "prefill") meta[keys::kPrefillMethodPrefix + std::to_string(step)] = name;
    }
    std::sort(steps.begin(), steps.end());
    meta[keys::kPrefillSteps] = steps;
  }
  meta[keys::kMaxContext] = max_context;
  meta[keys::kVocabSize] = config.vocab_size;
  meta[keys::kNumLayers] = config.num_layers;
  meta[keys::kNumHeads] = config.num_heads;
  meta[keys::kNumKvHeads] = config.num_kv_heads;
  meta[keys::kHeadDim] = config.head_dim;
  meta[keys::kCacheDtype] = std::string(dtype_name(options.cache_dtype));
  meta[keys::kLogits] = options.logits;
  meta[keys::kBosId] = config.bos_id;
  meta[keys::kEosIds] = config.eos_ids;
  const auto caches = static_cast<size_t>(2 * config.num_layers);
  const bool in_place = std::all_of(program.methods.begin(), program.methods.end(),
                                    [&](const program::MethodSpec& m) { return updates_caches_in_place(m, caches); });
  meta[keys::kCacheUpdate] = std::string(in_place ? keys::kCacheUpdateInPlace : keys::kCacheUpdateRunner);
  meta["model_architecture"] = config.architecture;
  meta["weight_dtype"] = std::string(dtype_name(options.dtype));
  meta["source"] = checkpoint.source();
  meta[keys::kTokenizerFormat] = tokenizer_format_name(checkpoint.tokenizer_format());
  if (checkpoint.tokenizer_format() != TokenizerFormat::kNone) {
    meta[keys::kTokenizerSegment] = static_cast<int64_t>(program.segments.size());
    program.segments.push_back(checkpoint.tokenizer_bytes());
  }
  add_chat_metadata(checkpoint.chat(), meta);
  return program;
}

}  // namespace kestrel::exporter
