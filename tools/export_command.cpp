// kestrel export CHECKPOINT -o PROGRAM: HF directory or llama2.c .bin -> hf_static v1 program.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <nlohmann/json.hpp>

#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/export.h"
#include "kestrel/api/export_inputs.h"
#include "kestrel/core/error_helpers.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"
#include "tools/json_file.h"
#include "tools/write_progress.h"

namespace kestrel::tools {

namespace {

constexpr uint64_t kMaxOptionsFileBytes = uint64_t{1} << 20;

struct ExportArgs {
  std::string checkpoint;
  std::string output;
  std::string backend;
  std::vector<std::string> options;
  std::string options_file;
  int64_t prefill_step = 32;
  std::vector<int64_t> extra_prefill_steps;
  int64_t max_context = 0;
  std::string dtype = "f32";
  std::string cache_dtype = "f32";
  std::string logits = "last";
  std::string tokenizer;
  bool list_options = false;
  bool show_nodes = false;
  bool quiet = false;
  bool progress = false;
};

Result<exporter::OptionMap> gather_options(const exporter::OptionTable& table, const ExportArgs& args) {
  exporter::OptionMap options;
  if (!args.options_file.empty()) {
    KESTREL_ASSIGN_OR_RETURN(nlohmann::json json, read_json_file(args.options_file, kMaxOptionsFileBytes, "options file"));
    if (!json.is_object())
      return make_error(ErrorCode::kInvalidArgument, "options file '{}' holds a JSON {}, not an object of options",
                        args.options_file, json.type_name());
    auto parsed = table.parse_json(json);
    if (!parsed.ok()) return parsed.error().with_context(args.options_file);
    options = std::move(parsed).value();
  }
  // Command-line options override the file.
  KESTREL_ASSIGN_OR_RETURN(auto cli, table.parse_cli(args.options));
  for (auto& [name, value] : cli) options[name] = std::move(value);
  return options;
}

Status run_export(const ExportArgs& args) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  auto progress = [&](const std::string& line) {
    if (args.quiet) return;
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    fmt::print(stderr, "[{:6.2f}s] {}\n", seconds, line);
  };

  api::ExportRequest request;
  if (!args.backend.empty()) {
    KESTREL_ASSIGN_OR_RETURN(request.backend, api::find_exporter_backend(args.backend));
    if (args.list_options) {
      fmt::print("Options of backend '{}':\n{}", request.backend->id(), request.backend->options().format_table());
      return ok_status();
    }
  } else if (args.list_options) {
    return make_error(ErrorCode::kInvalidArgument, "--list-options needs --backend NAME (available: {})",
                      fmt::join(api::exporter_backend_names(), ", "));
  } else if (!args.options.empty() || !args.options_file.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "--option and --options-file need --backend NAME");
  } else if (args.show_nodes) {
    return make_error(ErrorCode::kInvalidArgument, "--show-nodes needs --backend NAME (available: {})",
                      fmt::join(api::exporter_backend_names(), ", "));
  }
  if (args.checkpoint.empty() || args.output.empty())
    return make_error(ErrorCode::kInvalidArgument, "export needs CHECKPOINT and -o PROGRAM");
  KESTREL_RETURN_IF_ERROR(api::refuse_overwriting_inputs(args.output, {args.options_file}));

  request.checkpoint = args.checkpoint;
  request.output = args.output;
  request.prefill_step = args.prefill_step;
  request.extra_prefill_steps = args.extra_prefill_steps;
  request.max_context = args.max_context;
  request.logits = args.logits;
  request.tokenizer = args.tokenizer;
  request.progress = progress;
  const bool terminal = ::isatty(STDERR_FILENO) != 0;
  if (!args.quiet && (terminal || args.progress)) request.write_progress = WriteProgress(args.output, terminal);
  auto dtype = api::parse_weight_dtype(args.dtype);
  if (!dtype.ok()) return dtype.error().with_context("--dtype");
  request.dtype = *dtype;
  auto cache_dtype = api::parse_cache_dtype(args.cache_dtype);
  if (!cache_dtype.ok()) return cache_dtype.error().with_context("--cache-dtype");
  request.cache_dtype = *cache_dtype;
  if (request.backend) {
    KESTREL_ASSIGN_OR_RETURN(request.backend_options, gather_options(request.backend->options(), args));
  }
  KESTREL_ASSIGN_OR_RETURN(auto report, api::export_checkpoint(request));

  if (report.tokenizer_format == "none")
    fmt::print(stderr,
               "kestrel export: warning: {} has no tokenizer, so the program carries none: run it with token ids "
               "(kestrel run --prompt-ids), or export again with --tokenizer FILE\n",
               args.checkpoint);
  if (!args.quiet) {
    fmt::print(stderr, "exported {} -> {}\n", args.checkpoint, args.output);
    fmt::print(stderr, "  weights {} ({} constants, {:.1f} MiB), context {}, {} caches\n", args.dtype, report.constants,
               static_cast<double>(report.constant_bytes) / (1 << 20), report.max_context, args.cache_dtype);
    size_t width = 8;
    for (const auto& method : report.methods) width = std::max(width, method.name.size() + 1);
    for (const auto& method : report.methods) {
      fmt::print(stderr, "  method {:{}} T={:<4} {} instructions, arena {:.1f} KiB\n", method.name, width, method.step,
                 method.instructions, static_cast<double>(method.arena_bytes) / 1024);
      std::vector<std::string> transforms;
      for (const auto& step : method.pipeline.executed)
        if (step.rfind("transform:", 0) == 0) transforms.push_back(step.substr(10));
      if (!transforms.empty()) fmt::print(stderr, "    edge transforms: {}\n", fmt::join(transforms, ", "));
      for (const auto& partition : method.pipeline.partitions) {
        fmt::print(stderr, "    delegated {} nodes in {} partitions; {} nodes stay portable", partition.delegated_nodes,
                   partition.partitions, partition.portable_nodes);
        std::vector<std::string> ops;
        for (const auto& [op, count] : partition.portable_ops) ops.push_back(fmt::format("{} x{}", op, count));
        fmt::print(stderr, "{}\n", ops.empty() ? "" : fmt::format(" ({})", fmt::join(ops, ", ")));
      }
    }
  }
  if (args.show_nodes) {
    for (const auto& method : report.methods) {
      const auto placements = exporter::node_placements(method.pipeline);
      fmt::print("nodes of method '{}' ({}; ids for skip_node_id_set):\n", method.name, placements.size());
      fmt::print("  {:>5}  {:<12} {:<28} {}\n", "id", "op", "output", "runs on");
      for (const auto& node : placements)
        fmt::print("  {:>5}  {:<12} {:<28} {}\n", node.id, node.op, node.output,
                   node.backend.empty() ? "portable: " + node.reason : fmt::format("{}:{}", node.backend, node.partition));
    }
  }
  return ok_status();
}

}  // namespace

void add_export_command(CLI::App& app) {
  auto* command = app.add_subcommand("export", "Export a checkpoint (HF directory or llama2.c .bin) to a program");
  static ExportArgs args;
  command->add_option("CHECKPOINT", args.checkpoint, "HF model directory or llama2.c checkpoint (.bin)");
  command->add_option("-o,--output", args.output, "Program file to write (.kst)");
  command->add_option("--backend", args.backend, "Delegate supported parts to this backend (qnn)");
  command->add_option("--option", args.options, "Backend option key=value (repeatable; see --list-options)")
      ->allow_extra_args(false);
  command->add_option("--options-file", args.options_file, "JSON object of backend options");
  command->add_flag("--list-options", args.list_options, "Print the backend's options and exit");
  command->add_flag("--show-nodes", args.show_nodes,
                    "Print every node of each method with its id, op and where it runs (the backend partition, or "
                    "portable and why); needs --backend");
  command->add_option("--prefill-step", args.prefill_step, "Tokens per prefill call")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  command->add_option("--extra-prefill-steps", args.extra_prefill_steps,
                      "More prefill methods, one per step (e.g. 512): each full chunk of a prompt runs through the "
                      "largest step that fits")
      ->delimiter(',')
      ->check(integer_in(2, std::numeric_limits<int64_t>::max()));
  command->add_option("--max-context", args.max_context, "KV cache length (default: model max, at most 1024)")
      ->check(integer_in(1, std::numeric_limits<int64_t>::max()));
  command->add_option("--dtype", args.dtype, "Weight dtype: f32, f16, bf16 or q8")->capture_default_str();
  command->add_option("--cache-dtype", args.cache_dtype,
                      "KV cache dtype: f32 (exact) or f16 (half the cache memory and decode attention reads; keys "
                      "and values are rounded to f16 as they are stored)")
      ->capture_default_str();
  command->add_option("--logits", args.logits, "Logits of the prefill method: last or all")->capture_default_str();
  command->add_option("--tokenizer", args.tokenizer,
                      "Tokenizer file: llama2.c tokenizer.bin (needed for .bin checkpoints), or a tokenizer.json "
                      "replacing the checkpoint's");
  command->add_flag("-q,--quiet", args.quiet, "No progress or summary");
  command->add_flag("--progress", args.progress,
                    "Report the write's progress even when stderr is not a terminal (a line per tenth)");
  command->callback([] {
    auto status = run_export(args);
    if (!status.ok()) {
      fmt::print(stderr, "kestrel export: {}\n", status.error().to_string());
      set_exit_code(1);
    }
  });
}

}  // namespace kestrel::tools
