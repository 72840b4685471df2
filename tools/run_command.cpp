// kestrel run PROGRAM --prompt "...": generate text, streamed to stdout.
#include <fmt/format.h>

#include <chrono>
#include <functional>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/llm/chat_session.h"
#include "kestrel/llm/runner.h"
#include "tools/backend_catalog.h"
#include "tools/chat_input.h"
#include "tools/commands.h"

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
  std::string system;
  std::string messages;
  bool stats = false;
  bool json = false;
  bool no_bos = false;
  bool ignore_eos = false;
  bool no_verify = false;
  std::string allocator = "heap";
  std::vector<std::string> backend_options;
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
          {"peak_rss_bytes", stats.peak_rss_bytes}};
}

void print_stats(const llm::GenerationStats& stats) {
  fmt::print(stderr,
             "\nload {:.1f} ms | time to first token {:.1f} ms | prefill {} tokens at {:.1f} tok/s | decode {} "
             "tokens at {:.1f} tok/s | peak RSS {:.1f} MiB\n",
             stats.load_ms, stats.ttft_ms, stats.prompt_tokens, stats.prefill_tokens_per_s, stats.generated_tokens,
             stats.decode_tokens_per_s, static_cast<double>(stats.peak_rss_bytes) / (1 << 20));
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

bool print_piece(const std::string& piece) {
  fmt::print("{}", piece);
  std::fflush(stdout);
  return true;
}

// Reads one turn per line from stdin until an empty line or EOF; "/reset" starts over.
void read_turns(const std::function<void(const std::string&)>& on_turn, const std::function<void()>& on_reset) {
  fmt::print(stderr, "chat mode: type a message and press enter; /reset starts over, an empty line or EOF quits\n");
  std::string line;
  while (true) {
    fmt::print("> ");
    std::fflush(stdout);
    if (!std::getline(std::cin, line) || line.empty()) break;
    if (line == "/reset") {
      on_reset();
      fmt::print(stderr, "(conversation cleared)\n");
      continue;
    }
    on_turn(line);
  }
}

// One turn per line through the program's chat template, reusing the cache between turns.
void run_chat_session(llm::ChatSession& session, const llm::GenerationConfig& config, const RunArgs& args) {
  read_turns(
      [&](const std::string& line) {
        auto reply = session.send(line, config, print_piece);
        if (!reply.ok()) {
          fmt::print(stderr, "\nkestrel run: {}\n", reply.error().to_string());
          return;  // the conversation is left as it was
        }
        fmt::print("\n");
        if (args.stats) {
          print_stats(reply->generation.stats);
          fmt::print(stderr, "prompt {} tokens, {} reused from earlier turns\n", reply->prompt_tokens,
                     reply->reused_tokens);
        }
      },
      [&] { session.reset(); });
}

// --messages: answers one conversation given as JSON.
Status run_messages(llm::Runner& runner, const llm::GenerationConfig& config, const RunArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(ChatInput input, read_chat_input(args.messages));
  llm::ChatOptions options;
  options.render.extra = input.extra;
  KESTREL_ASSIGN_OR_RETURN(auto session, llm::ChatSession::create(runner, options));
  const bool stream = !args.json;
  auto reply = session.respond(input.messages, config, [stream](const std::string& piece) {
    return stream ? print_piece(piece) : true;
  });
  if (!reply.ok()) return reply.error();
  if (args.json) {
    nlohmann::json out = {{"text", reply->text},
                          {"prompt", reply->prompt},
                          {"prompt_token_ids", reply->generation.prompt_token_ids},
                          {"token_ids", reply->generation.token_ids},
                          {"stop_reason", reply->generation.stop_reason},
                          {"seed", config.sampler.seed},
                          {"stats", stats_json(reply->generation.stats)}};
    fmt::print("{}\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  } else {
    fmt::print("\n");
    if (args.stats) print_stats(reply->generation.stats);
  }
  return ok_status();
}

Status run_chat(llm::Runner& runner, llm::GenerationConfig config, const RunArgs& args) {
  llm::ChatOptions options;
  options.system_prompt = args.system;
  auto session = llm::ChatSession::create(runner, options);
  if (session.ok()) {
    run_chat_session(*session, config, args);
    return ok_status();
  }
  if (session.error().code() != ErrorCode::kNotFound) return session.error();
  fmt::print(stderr, "this program has no chat template: each line is sent as raw continuation text{}\n",
             args.system.empty() ? "" : " (--system is ignored)");
  read_turns(
      [&](const std::string& line) {
        auto result = runner.generate(line + "\n", config, print_piece);
        if (!result.ok()) {
          fmt::print(stderr, "\nkestrel run: {}\n", result.error().to_string());
          return;  // the session is left as it was; the user can /reset or go on
        }
        fmt::print("\n");
        if (args.stats) print_stats(result->stats);
      },
      [&] { runner.reset(); });
  return ok_status();
}

Result<std::shared_ptr<const runtime::KernelRegistry>> kernel_registry(const RunArgs& args) {
  if (args.threads < 0)
    return make_error(ErrorCode::kInvalidArgument, "--threads must be 0 (all cores) or more, got {}", args.threads);
  if (args.kernels == "portable") return kernels::portable_kernel_registry();
  if (args.kernels == "optimized") {
    cpu::CpuKernelOptions kernel_options;
    kernel_options.threads = args.threads;
    return cpu::optimized_kernel_registry(kernel_options);
  }
  return make_error(ErrorCode::kInvalidArgument, "--kernels must be portable or optimized, got '{}'", args.kernels);
}

Status run_generate(const RunArgs& args) {
  if (args.chat && args.json) return make_error(ErrorCode::kInvalidArgument, "--chat and --json cannot be combined");
  if (args.chat && !args.messages.empty())
    return make_error(ErrorCode::kInvalidArgument, "--chat and --messages cannot be combined");
  if (!args.system.empty() && !args.chat)
    return make_error(ErrorCode::kInvalidArgument, "--system needs --chat (put a system message in the --messages file)");
  llm::RunnerOptions options;
  KESTREL_ASSIGN_OR_RETURN(options.kernels, kernel_registry(args));
  KESTREL_ASSIGN_OR_RETURN(options.backends, runtime_backends(args.backend_options));
  options.allocator = args.allocator;
  options.load.verify_checksums = !args.no_verify;
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
  if (!args.messages.empty()) return run_messages(*runner, config, args);
  KESTREL_ASSIGN_OR_RETURN(std::string prompt, read_prompt(args));
  if (prompt.empty()) return make_error(ErrorCode::kInvalidArgument, "no prompt: pass --prompt, --prompt-file, --messages or --chat");

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
  command->add_flag("--chat", args.chat,
                    "Interactive multi-turn session on stdin, through the program's chat template when it has one");
  command->add_option("--system", args.system, "With --chat: a system message that opens the conversation");
  command->add_option("--messages", args.messages,
                      "Answer one conversation: a JSON file with a list of messages, or {\"messages\": [...], "
                      "\"tools\": [...], ...}");
  command->add_flag("--stats", args.stats, "Print load time, time to first token, tok/s and peak RSS");
  command->add_flag("--json", args.json, "Print one JSON object with text, token ids, stop reason and stats");
  command->add_flag("--no-bos", args.no_bos, "Do not prepend the beginning-of-sequence token");
  command->add_flag("--ignore-eos", args.ignore_eos, "Keep generating past end-of-sequence tokens");
  command->add_flag("--no-verify", args.no_verify,
                    "Skip the program's checksums at load (the structure is still verified)");
  command->add_option("--allocator", args.allocator, "I/O buffer allocator (heap, memfd, rpcmem)")
      ->capture_default_str();
  command->add_option("--backend-option", args.backend_options,
                      "Runtime option of a backend, NAME.KEY=VALUE (repeatable), e.g. qnn.library=stand-in (the CPU "
                      "stand-in) or qnn.library=/path/to/libQnnHtp.so")
      ->allow_extra_args(false);
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
