// kestrel run PROGRAM --prompt "...": generate text, streamed to stdout.
#include <fmt/format.h>

#include <charconv>
#include <chrono>
#include <limits>
#include <optional>
#include <functional>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/generation.h"
#include "kestrel/api/kernel_choice.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/file.h"
#include "kestrel/llm/chat_session.h"
#include "kestrel/llm/runner.h"
#include "tools/chat_input.h"
#include "tools/cli_checks.h"
#include "tools/commands.h"

namespace kestrel::tools {

namespace {

// Bounds on text read from files and stdin: far above any context, far below what exhausts memory.
constexpr uint64_t kMaxPromptBytes = uint64_t{16} << 20;
constexpr size_t kMaxChatLineBytes = size_t{1} << 20;

struct RunArgs {
  std::string program;
  std::string prompt;
  std::string prompt_file;
  std::string prompt_ids;
  api::GenerationSettings generation;
  std::string seed;  // empty: random; checked by unsigned_integer()
  bool chat = false;
  std::string system;
  std::string messages;
  bool stats = false;
  bool json = false;
  bool no_bos = false;
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
  if (!args.prompt_file.empty()) return read_file_text(args.prompt_file, kMaxPromptBytes, "prompt file");
  return args.prompt;
}

// "1,17 42" -> {1, 17, 42}: ids separated by commas and/or spaces.
Result<std::vector<int64_t>> parse_prompt_ids(const std::string& text) {
  std::vector<int64_t> ids;
  size_t pos = 0;
  while (true) {
    pos = text.find_first_not_of(", \t\n", pos);
    if (pos == std::string::npos) break;
    const size_t end = std::min(text.find_first_of(", \t\n", pos), text.size());
    const std::string word = text.substr(pos, end - pos);
    int64_t id = 0;
    const auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), id);
    if (ec != std::errc() || ptr != word.data() + word.size() || id < 0)
      return make_error(ErrorCode::kInvalidArgument, "--prompt-ids: '{}' is not a token id (a non-negative integer)",
                        word);
    ids.push_back(id);
    pos = end;
  }
  if (ids.empty()) return make_error(ErrorCode::kInvalidArgument, "--prompt-ids: no token ids given");
  return ids;
}

// One line of `in` without its newline; nullopt at end of input. A line longer than `max_bytes`
// (e.g. stdin is /dev/zero) is an error, not an unbounded read.
Result<std::optional<std::string>> read_line_bounded(std::istream& in, size_t max_bytes) {
  std::string line;
  std::streambuf* buffer = in.rdbuf();
  while (true) {
    const int c = buffer->sbumpc();
    if (c == std::char_traits<char>::eof()) {
      if (line.empty()) return std::optional<std::string>();
      break;
    }
    if (c == '\n') break;
    if (line.size() == max_bytes)
      return make_error(ErrorCode::kCapacity, "a line of standard input is longer than {} bytes", max_bytes);
    line.push_back(static_cast<char>(c));
  }
  return std::optional<std::string>(std::move(line));
}

// A turn's error; a full context also says how to go on.
void print_turn_error(const Error& error) {
  fmt::print(stderr, "\nkestrel run: {}\n", error.to_string());
  if (error.code() == ErrorCode::kCapacity)
    fmt::print(stderr, "(the conversation does not fit the program's context: type /reset to start a new one)\n");
}

bool print_piece(const std::string& piece) {
  fmt::print("{}", piece);
  std::fflush(stdout);
  return true;
}

// Reads one turn per line from stdin until an empty line or EOF; "/reset" starts over.
Status read_turns(const std::function<void(const std::string&)>& on_turn, const std::function<void()>& on_reset) {
  fmt::print(stderr, "chat mode: type a message and press enter; /reset starts over, an empty line or EOF quits\n");
  while (true) {
    fmt::print("> ");
    std::fflush(stdout);
    KESTREL_ASSIGN_OR_RETURN(std::optional<std::string> read, read_line_bounded(std::cin, kMaxChatLineBytes));
    if (!read || read->empty()) break;
    const std::string& line = *read;
    if (line == "/reset") {
      on_reset();
      fmt::print(stderr, "(conversation cleared)\n");
      continue;
    }
    on_turn(line);
  }
  return ok_status();
}

// One turn per line through the program's chat template, reusing the cache between turns.
Status run_chat_session(llm::ChatSession& session, const llm::GenerationConfig& config, const RunArgs& args) {
  return read_turns(
      [&](const std::string& line) {
        auto reply = session.send(line, config, print_piece);
        if (!reply.ok()) {
          print_turn_error(reply.error());
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
  if (session.ok()) return run_chat_session(*session, config, args);
  if (session.error().code() != ErrorCode::kNotFound) return session.error();
  fmt::print(stderr, "this program has no chat template: each line is sent as raw continuation text{}\n",
             args.system.empty() ? "" : " (--system is ignored)");
  return read_turns(
      [&](const std::string& line) {
        auto result = runner.generate(line + "\n", config, print_piece);
        if (!result.ok()) {
          print_turn_error(result.error());
          return;  // the session is left as it was; the user can /reset or go on
        }
        fmt::print("\n");
        if (args.stats) print_stats(result->stats);
      },
      [&] { runner.reset(); });
}

Status run_prompt(llm::Runner& runner, const llm::GenerationConfig& config, const RunArgs& args);

Status run_generate(const RunArgs& args) {
  if (args.chat && args.json) return make_error(ErrorCode::kInvalidArgument, "--chat and --json cannot be combined");
  if (args.chat && !args.messages.empty())
    return make_error(ErrorCode::kInvalidArgument, "--chat and --messages cannot be combined");
  if (!args.system.empty() && !args.chat)
    return make_error(ErrorCode::kInvalidArgument, "--system needs --chat (put a system message in the --messages file)");
  llm::RunnerOptions options;
  KESTREL_ASSIGN_OR_RETURN(options.kernels, api::kernel_registry_for(args.kernels, args.threads));
  KESTREL_ASSIGN_OR_RETURN(options.backends, api::runtime_backends(args.backend_options));
  options.allocator = args.allocator;
  options.load.verify_checksums = !args.no_verify;
  KESTREL_ASSIGN_OR_RETURN(auto runner, llm::Runner::load(args.program, options));

  api::GenerationSettings settings = args.generation;
  if (!args.seed.empty()) settings.seed = std::stoull(args.seed);
  settings.add_bos = !args.no_bos;
  const llm::GenerationConfig config = api::generation_config(settings);

  if (args.chat) return run_chat(*runner, config, args);
  if (!args.messages.empty()) return run_messages(*runner, config, args);
  return run_prompt(*runner, config, args);
}

// --prompt, --prompt-file or --prompt-ids: one generation, streamed or as one JSON object.
Status run_prompt(llm::Runner& runner, const llm::GenerationConfig& config, const RunArgs& args) {
  const bool stream = !args.json;
  // The prompt is echoed with the first generated piece, so a request that fails its checks
  // prints nothing but the error.
  std::string echo;
  bool echoed = false;
  const auto print_echo = [&] {
    if (!stream || echoed) return;
    echoed = true;
    print_piece(echo);
  };
  const auto on_text = [&](const std::string& piece) {
    print_echo();
    return stream ? print_piece(piece) : true;
  };
  Result<llm::GenerationResult> result = Error(ErrorCode::kInternal, "no generation ran");
  if (!args.prompt_ids.empty()) {
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> ids, parse_prompt_ids(args.prompt_ids));
    if (const llm::Tokenizer* tokenizer = runner.tokenizer()) {
      auto text = tokenizer->decode(ids);  // ids outside the vocabulary fail in generate_ids below
      if (text.ok()) echo = std::move(text).value();
    }
    result = runner.generate_ids(ids, config, on_text);
  } else {
    KESTREL_ASSIGN_OR_RETURN(echo, read_prompt(args));
    if (echo.empty())
      return make_error(ErrorCode::kInvalidArgument,
                        "no prompt: pass --prompt, --prompt-file, --prompt-ids, --messages or --chat");
    result = runner.generate(echo, config, on_text);
  }
  if (!result.ok()) return result.error();
  print_echo();
  if (stream && runner.tokenizer() == nullptr) fmt::print("{}", fmt::join(result->token_ids, " "));
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
  auto* prompt = command->add_option("-p,--prompt", args.prompt, "Prompt text");
  auto* prompt_file = command->add_option("-f,--prompt-file", args.prompt_file, "Read the prompt from a file");
  auto* prompt_ids = command->add_option("--prompt-ids", args.prompt_ids,
                                         "Prompt as token ids, e.g. \"1,17,42\" (works without a tokenizer; the "
                                         "generated ids are printed)");
  command->add_option("-n,--max-new-tokens", args.generation.max_new_tokens, "Tokens to generate")
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->capture_default_str();
  command->add_option("--temperature,--temp", args.generation.temperature, "Sampling temperature; 0 means greedy")
      ->capture_default_str();
  command->add_option("--top-k", args.generation.top_k, "Keep the k most likely tokens; 0 disables")
      ->check(integer_in(0, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("--top-p", args.generation.top_p, "Nucleus sampling mass; 1 disables")->capture_default_str();
  command->add_option("--min-p", args.generation.min_p, "Drop tokens below min-p times the best; 0 disables")
      ->capture_default_str();
  command->add_option("--repeat-penalty", args.generation.repeat_penalty, "Penalty for recent tokens; 1 disables")
      ->capture_default_str();
  command->add_option("--repeat-last-n", args.generation.repeat_last_n, "How many recent tokens the penalty sees; -1 all")
      ->check(integer_in(-1, std::numeric_limits<int>::max()))
      ->capture_default_str();
  command->add_option("-s,--seed", args.seed, "Sampling seed (default: random; printed with --json)")
      ->check(unsigned_integer());
  command->add_option("--stop", args.generation.stop, "Stop when this text is generated (repeatable)")
      ->check(non_empty_text())
      ->allow_extra_args(false);
  auto* chat = command->add_flag(
      "--chat", args.chat, "Interactive multi-turn session on stdin, through the program's chat template when it has one");
  command->add_option("--system", args.system, "With --chat: a system message that opens the conversation");
  auto* messages = command->add_option("--messages", args.messages,
                                       "Answer one conversation: a JSON file with a list of messages, or "
                                       "{\"messages\": [...], \"tools\": [...], ...}");
  // One source of input: a second one would be silently dropped.
  prompt->excludes(prompt_file)->excludes(prompt_ids);
  prompt_file->excludes(prompt_ids);
  for (CLI::Option* other : {prompt, prompt_file, prompt_ids}) chat->excludes(other)->excludes(messages);
  messages->excludes(prompt)->excludes(prompt_file)->excludes(prompt_ids);
  command->add_flag("--stats", args.stats, "Print load time, time to first token, tok/s and peak RSS");
  command->add_flag("--json", args.json, "Print one JSON object with text, token ids, stop reason and stats");
  command->add_flag("--no-bos", args.no_bos, "Do not prepend the beginning-of-sequence token");
  command->add_flag("--ignore-eos", args.generation.ignore_eos, "Keep generating past end-of-sequence tokens");
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
      ->check(integer_in(0, 1024))
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
