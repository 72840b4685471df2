// kestrel run PROGRAM --prompt "...": generate text, streamed to stdout.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/runner.h"
#include "tools/backend_catalog.h"
#include "tools/commands.h"
#include "tools/kernel_choice.h"

namespace kestrel::tools {

namespace {

struct RunArgs {
  std::string program;
  std::string prompt;
  std::string prompt_file;
  int64_t max_new_tokens = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int repeat_last_n = 64;
  int64_t seed = -1;
  std::vector<std::string> stop;
  bool chat = false;
  bool stats = false;
  bool json = false;
  bool no_bos = false;
  bool ignore_eos = false;
  std::string allocator = "heap";
  std::string kernels = "optimized";
  int threads = 0;
};

nlohmann::json stats_json(const llm::GenerationStats& stats) {
  return {{"load_ms", stats.load_ms},
          {"ttft_ms", stats.ttft_ms},
          {"prefill_tokens_per_s", stats.prefill_tokens_per_s},
          {"decode_tokens_per_s", stats.decode_tokens_per_s},
          {"prompt_tokens", stats.prompt_tokens},
          {"generated_tokens", stats.generated_tokens},
          {"peak_rss_bytes", stats.peak_rss_bytes},
          {"cache_bytes_copied_per_decode_step", stats.cache_bytes_copied_per_decode_step}};
}

void print_stats(const llm::GenerationStats& stats) {
  fmt::print(stderr,
             "\nload {:.1f} ms | time to first token {:.1f} ms | prefill {} tokens at {:.1f} tok/s | decode {} "
             "tokens at {:.1f} tok/s | peak RSS {:.1f} MiB | KV cache bytes copied per decode step {:.0f}\n",
             stats.load_ms, stats.ttft_ms, stats.prompt_tokens, stats.prefill_tokens_per_s, stats.generated_tokens,
             stats.decode_tokens_per_s, static_cast<double>(stats.peak_rss_bytes) / (1 << 20),
             stats.cache_bytes_copied_per_decode_step);
}

Result<std::string> read_prompt(const RunArgs& args) {
  if (!args.prompt_file.empty()) {
    std::ifstream file(args.prompt_file, std::ios::binary);
    if (!file) return make_error(ErrorCode::kIo, "cannot open prompt file '{}'", args.prompt_file);
    std::ostringstream text;
    text << file.rdbuf();
    return text.str();
  }
  return args.prompt;
}

Status run_chat(llm::Runner& runner, llm::GenerationConfig config, const RunArgs& args) {
  fmt::print(stderr, "chat mode: type a message and press enter; /reset starts over, an empty line or EOF quits\n");
  std::string line;
  while (true) {
    fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line.empty()) break;
    if (line == "/reset") {
      runner.reset();
      fmt::print(stderr, "(conversation cleared)\n");
      continue;
    }
    auto result = runner.generate(line + "\n", config, [](const std::string& piece) {
      fmt::print("{}", piece);
      std::fflush(stdout);
      return true;
    });
    if (!result.ok()) {
      fmt::print(stderr, "\nkestrel run: {}\n", result.error().to_string());
      continue;  // the session is left as it was; the user can /reset or go on
    }
    fmt::print("\n");
    if (args.stats) print_stats(result->stats);
    config.add_bos = false;
  }
  return ok_status();
}

Status run_generate(const RunArgs& args) {
  if (args.chat && args.json) return make_error(ErrorCode::kInvalidArgument, "--chat and --json cannot be combined");
  llm::RunnerOptions options;
  KESTREL_ASSIGN_OR_RETURN(options.kernels, kernel_registry_for(args.kernels, args.threads));
  options.backends = runtime_backends();
  options.allocator = args.allocator;
  KESTREL_ASSIGN_OR_RETURN(auto runner, llm::Runner::load(args.program, options));

  llm::GenerationConfig config;
  config.max_new_tokens = args.max_new_tokens;
  config.stop_strings = args.stop;
  config.add_bos = !args.no_bos;
  config.stop_at_eos = !args.ignore_eos;
  config.sampler.temperature = args.temperature;
  config.sampler.top_k = args.top_k;
  config.sampler.top_p = args.top_p;
  config.sampler.min_p = args.min_p;
  config.sampler.repetition_penalty = args.repeat_penalty;
  config.sampler.repetition_last_n = args.repeat_last_n;
  config.sampler.seed = args.seed >= 0 ? static_cast<uint64_t>(args.seed) : std::random_device{}();

  if (args.chat) return run_chat(*runner, config, args);
  KESTREL_ASSIGN_OR_RETURN(std::string prompt, read_prompt(args));
  if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "no prompt: pass --prompt, --prompt-file or --chat");

  const bool stream = !args.json;
  if (stream) {
    fmt::print("{}", prompt);
    std::fflush(stdout);
  }
  auto result = runner->generate(prompt, config, [stream](const std::string& piece) {
    if (stream) {
      fmt::print("{}", piece);
      std::fflush(stdout);
    }
    return true;
  });
  if (!result.ok()) return result.error();
  if (args.json) {
    nlohmann::json out = {{"text", result->text},
                          {"prompt_token_ids", result->prompt_token_ids},
                          {"token_ids", result->token_ids},
                          {"stop_reason", result->stop_reason},
                          {"seed", config.sampler.seed},
                          {"stats", stats_json(result->stats)}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("\n");
    if (args.stats) print_stats(result->stats);
  }
  return ok_status();
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* command = app.add_subcommand("run", "Generate text from a program");
  static RunArgs args;
  command->add_option("PROGRAM", args.program, "Program file (.kst)")->required();
  command->add_option("-p,--prompt", args.prompt, "Prompt text");
  command->add_option("-f,--prompt-file", args.prompt_file, "Read the prompt from a file");
  command->add_option("-n,--max-new-tokens", args.max_new_tokens, "Tokens to generate")->capture_default_str();
  command->add_option("--temperature,--temp", args.temperature, "Sampling temperature; 0 means greedy")
      ->capture_default_str();
  command->add_option("--top-k", args.top_k, "Keep the k most likely tokens; 0 disables")->capture_default_str();
  command->add_option("--top-p", args.top_p, "Nucleus sampling mass; 1 disables")->capture_default_str();
  command->add_option("--min-p", args.min_p, "Drop tokens below min-p times the best; 0 disables")
      ->capture_default_str();
  command->add_option("--repeat-penalty", args.repeat_penalty, "Penalty for recent tokens; 1 disables")
      ->capture_default_str();
  command->add_option("--repeat-last-n", args.repeat_last_n, "How many recent tokens the penalty sees")
      ->capture_default_str();
  command->add_option("-s,--seed", args.seed, "Sampling seed (default: random; printed with --json)");
  command->add_option("--stop", args.stop, "Stop when this text is generated (repeatable)")->allow_extra_args(false);
  command->add_flag("--chat", args.chat, "Interactive multi-turn session on stdin");
  command->add_flag("--stats", args.stats, "Print load time, time to first token, tok/s and peak RSS");
  command->add_flag("--json", args.json, "Print one JSON object with text, token ids, stop reason and stats");
  command->add_flag("--no-bos", args.no_bos, "Do not prepend the beginning-of-sequence token");
  command->add_flag("--ignore-eos", args.ignore_eos, "Keep generating past end-of-sequence tokens");
  command->add_option("--allocator", args.allocator, "I/O buffer allocator (heap, memfd, rpcmem)")
      ->capture_default_str();
  command->add_option("--kernels", args.kernels,
                      "CPU kernels: optimized (SIMD, multi-threaded; KESTREL_CPU_ISA=scalar forces the scalar "
                      "fallback) or portable (the scalar reference)")
      ->capture_default_str();
  command->add_option("--threads", args.threads, "Threads for the optimized kernels; 0 uses every core")
      ->capture_default_str();
  command->callback([] {
    auto status = run_generate(args);
    if (!status.ok()) {
      fmt::print(stderr, "kestrel run: {}\n", status.error().to_string());
      set_exit_code(1);
    }
  });
}

}  // namespace kestrel::tools
