// kestrel bench PROGRAM: prompt processing and generation speed, in the style of llama-bench.
// For every thread count the program is loaded once (load time measured); then each prompt
// length is processed (ppN: N tokens through the prefill and decode methods as the runner
// routes them), and N tokens are generated one decode step at a time (tgN; no sampling, like
// llama-bench). Each test starts at a context depth D (-d, default 0: an empty cache); the
// D tokens before it are run once, unmeasured, and every repetition rewinds to position D.
// Every test runs once unmeasured, then `reps` measured times; the report is the mean and
// standard deviation of tokens/s.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/runner.h"
#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/kernel_choice.h"
#include "kestrel/fixtures/bench_tokens.h"
#include "tools/commands.h"

namespace kestrel::tools {

namespace {

using fixtures::bench_tokens;
using Clock = std::chrono::steady_clock;

struct BenchArgs {
  std::string program;
  std::vector<int64_t> prompt_lengths{512};
  std::vector<int64_t> generate_lengths{128};
  std::vector<int64_t> depths{0};
  std::vector<int> threads{0};
  int reps = 5;
  bool json = false;
  bool profile = false;
  std::string kernels = "optimized";
  std::string allocator = "heap";
  std::vector<std::string> backend_options;
};

// Time per repetition in the instructions of one op of one method (--profile).
struct ProfileRow {
  std::string method, op;
  double ms = 0;
  double calls = 0;
};

struct TestResult {
  std::string name;  // "pp512", "tg128", "tg128@d512"
  int64_t n_prompt = 0, n_gen = 0, n_depth = 0;
  int threads = 0;
  std::vector<double> samples{};  // tokens/s per measured repetition
  double load_ms = 0;
  double cache_bytes_copied_per_decode_step = 0;  // tg tests
  std::vector<ProfileRow> profile{};            // --profile: slowest first

  // Mean wall time of one measured repetition.
  double ms_per_rep() const {
    double ms = 0;
    for (double s : samples) ms += 1e3 * static_cast<double>(n_prompt + n_gen) / s;
    return samples.empty() ? 0 : ms / static_cast<double>(samples.size());
  }
  double mean() const {
    double sum = 0;
    for (double s : samples) sum += s;
    return samples.empty() ? 0 : sum / static_cast<double>(samples.size());
  }
  double stddev() const {
    if (samples.size() < 2) return 0;
    const double m = mean();
    double sq = 0;
    for (double s : samples) sq += (s - m) * (s - m);
    return std::sqrt(sq / static_cast<double>(samples.size() - 1));
  }
};

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Prompt processing of `tokens` at positions from `depth` on. Starting at `depth` rewinds the
// manager's history there; the cache rows before it stay as the fill left them.
Result<double> time_prompt(llm::IOManager& io, const std::vector<int64_t>& tokens, int64_t depth) {
  const auto start = Clock::now();
  KESTREL_RETURN_IF_ERROR(io.forward(tokens, depth));
  return static_cast<double>(tokens.size()) / seconds_since(start);
}

// One decode step per token, at positions from `depth` on.
Result<double> time_generation(llm::IOManager& io, const std::vector<int64_t>& tokens, int64_t depth) {
  const auto start = Clock::now();
  for (size_t i = 0; i < tokens.size(); ++i)
    KESTREL_RETURN_IF_ERROR(io.forward(std::span<const int64_t>(&tokens[i], 1), depth + static_cast<int64_t>(i)));
  return static_cast<double>(tokens.size()) / seconds_since(start);
}

// Clears the caches and runs the `depth` tokens a test starts after (unmeasured).
Status fill_depth(llm::IOManager& io, int64_t depth, int64_t vocab) {
  io.reset();
  if (depth == 0) return ok_status();
  KESTREL_RETURN_IF_ERROR(io.forward(bench_tokens(depth, vocab), 0));
  return ok_status();
}

// The instructions' time per repetition, summed per method and op, slowest first.
std::vector<ProfileRow> collect_profile(llm::IOManager& io, int reps) {
  std::vector<ProfileRow> rows;
  for (runtime::Method* method : io.methods()) {
    for (const runtime::Method::InstructionTime& step : method->profile()) {
      if (step.calls == 0) continue;
      auto row = std::find_if(rows.begin(), rows.end(),
                              [&](const ProfileRow& r) { return r.method == method->name() && r.op == step.op; });
      if (row == rows.end()) row = rows.insert(rows.end(), ProfileRow{method->name(), step.op});
      row->ms += 1e3 * step.seconds / reps;
      row->calls += static_cast<double>(step.calls) / reps;
    }
  }
  std::sort(rows.begin(), rows.end(), [](const ProfileRow& a, const ProfileRow& b) { return a.ms > b.ms; });
  return rows;
}

Result<std::vector<TestResult>> run_benchmarks(const BenchArgs& args) {
  if (args.reps < 1) return make_error(ErrorCode::kInvalidArgument, "-r/--repetitions must be >= 1, got {}", args.reps);
  for (int64_t n : args.prompt_lengths)
    if (n < 0) return make_error(ErrorCode::kInvalidArgument, "-p: prompt lengths must be >= 0, got {}", n);
  for (int64_t n : args.generate_lengths)
    if (n < 0) return make_error(ErrorCode::kInvalidArgument, "-n: generated lengths must be >= 0, got {}", n);
  for (int64_t n : args.depths)
    if (n < 0) return make_error(ErrorCode::kInvalidArgument, "-d: depths must be >= 0, got {}", n);
  std::vector<TestResult> results;
  for (int threads : args.threads) {
    llm::RunnerOptions options;
    KESTREL_ASSIGN_OR_RETURN(options.kernels, api::kernel_registry_for(args.kernels, threads));
    KESTREL_ASSIGN_OR_RETURN(options.backends, api::runtime_backends(args.backend_options));
    options.allocator = args.allocator;
    KESTREL_ASSIGN_OR_RETURN(auto runner, llm::Runner::load(args.program, options));
    llm::IOManager& io = runner->io_manager();
    if (args.profile)
      for (runtime::Method* method : io.methods()) method->enable_profiling();
    const llm::ModelInfo& info = runner->model_info();
    auto fits = [&](const std::string& test, int64_t n) -> Status {
      if (n > info.max_context)
        return make_error(ErrorCode::kCapacity, "test {} needs {} positions, but the program's context is {}", test, n,
                          info.max_context);
      return ok_status();
    };
    auto measure = [&](TestResult result, auto&& once) -> Status {
      result.threads = threads;
      result.load_ms = runner->load_ms();
      KESTREL_RETURN_IF_ERROR(once());  // warm-up
      for (runtime::Method* method : io.methods()) method->clear_profile();
      const llm::IoStats before = io.io_stats();
      for (int r = 0; r < args.reps; ++r) {
        auto speed = once();
        if (!speed.ok()) return speed.error().with_context("test " + result.name);
        result.samples.push_back(*speed);
      }
      const llm::IoStats after = io.io_stats();
      if (const int64_t steps = after.decode_calls - before.decode_calls; result.n_gen > 0 && steps > 0)
        result.cache_bytes_copied_per_decode_step =
            static_cast<double>(after.decode_cache_bytes_copied - before.decode_cache_bytes_copied) / steps;
      if (args.profile) result.profile = collect_profile(io, args.reps);
      results.push_back(std::move(result));
      return ok_status();
    };
    // Per depth, prompt tests first, then generation tests, as llama-bench orders them; 0 means none.
    std::vector<TestResult> tests;
    for (int64_t d : args.depths) {
      const std::string at = d > 0 ? fmt::format("@d{}", d) : "";
      for (int64_t n : args.prompt_lengths)
        if (n > 0) tests.push_back(TestResult{fmt::format("pp{}{}", n, at), n, 0, d});
      for (int64_t n : args.generate_lengths)
        if (n > 0) tests.push_back(TestResult{fmt::format("tg{}{}", n, at), 0, n, d});
    }
    for (TestResult& test : tests) {
      const int64_t n = test.n_prompt + test.n_gen, depth = test.n_depth;
      KESTREL_RETURN_IF_ERROR(fits(test.name, depth + n));
      auto filled = fill_depth(io, depth, info.vocab_size);
      if (!filled.ok()) return filled.error().with_context("filling the context of test " + test.name);
      const auto tokens = bench_tokens(n, info.vocab_size);
      const bool prompt = test.n_prompt > 0;
      KESTREL_RETURN_IF_ERROR(measure(
          test, [&] { return prompt ? time_prompt(io, tokens, depth) : time_generation(io, tokens, depth); }));
    }
  }
  return results;
}

nlohmann::json to_json(const BenchArgs& args, const std::vector<TestResult>& results) {
  nlohmann::json tests = nlohmann::json::array();
  double prefill = 0, decode = 0;
  bool have_prefill = false, have_decode = false;
  for (const TestResult& r : results) {
    tests.push_back({{"test", r.name},
                     {"n_prompt", r.n_prompt},
                     {"n_gen", r.n_gen},
                     {"n_depth", r.n_depth},
                     {"threads", r.threads},
                     {"reps", r.samples.size()},
                     {"tok_s_mean", r.mean()},
                     {"tok_s_stddev", r.stddev()},
                     {"samples_tok_s", r.samples},
                     {"load_ms", r.load_ms},
                     {"cache_bytes_copied_per_decode_step", r.cache_bytes_copied_per_decode_step}});
    if (args.profile) {
      nlohmann::json instructions = nlohmann::json::array();
      for (const ProfileRow& row : r.profile)
        instructions.push_back({{"method", row.method},
                                {"op", row.op},
                                {"ms", row.ms},
                                {"share", row.ms / r.ms_per_rep()},
                                {"calls", row.calls}});
      tests.back()["profile"] = {{"ms_per_rep", r.ms_per_rep()}, {"instructions", instructions}};
    }
    if (r.n_prompt > 0 && !have_prefill) prefill = r.mean(), have_prefill = true;
    if (r.n_gen > 0 && !have_decode) decode = r.mean(), have_decode = true;
  }
  return {{"program", args.program},
          {"kernels", api::kernel_description(args.kernels, args.threads.front())},
          {"prefill_tok_s", prefill},
          {"decode_tok_s", decode},
          {"load_ms", results.empty() ? 0.0 : results.front().load_ms},
          {"peak_rss_bytes", llm::peak_rss_bytes()},
          {"tests", tests}};
}

void print_table(const BenchArgs& args, const std::vector<TestResult>& results) {
  fmt::print("| program | kernels | threads | test | tok/s |\n|---|---|---|---|---|\n");
  for (const TestResult& r : results)
    fmt::print("| {} | {} | {} | {} | {:.2f} ± {:.2f} |\n", args.program, api::kernel_description(args.kernels, r.threads),
               r.threads, r.name, r.mean(), r.stddev());
  fmt::print("\n");
  int last_threads = -1;
  for (const TestResult& r : results)
    if (r.threads != last_threads) {
      fmt::print("load {:.1f} ms ({} threads)\n", r.load_ms, r.threads);
      last_threads = r.threads;
    }
  fmt::print("peak RSS {:.1f} MiB\n", static_cast<double>(llm::peak_rss_bytes()) / (1 << 20));
  for (const TestResult& r : results) {
    if (!args.profile) break;
    const double total = r.ms_per_rep();
    double in_instructions = 0;
    for (const ProfileRow& row : r.profile) in_instructions += row.ms;
    fmt::print("\nprofile of {}, {} threads, per repetition: {:.2f} ms, {:.2f} ms of it in instructions\n", r.name,
               r.threads, total, in_instructions);
    fmt::print("| method | op | ms | share | calls |\n|---|---|---|---|---|\n");
    for (const ProfileRow& row : r.profile)
      fmt::print("| {} | {} | {:.3f} | {:.1f}% | {:g} |\n", row.method, row.op, row.ms, 100 * row.ms / total, row.calls);
    fmt::print("| (outside instructions) | | {:.3f} | {:.1f}% | |\n", total - in_instructions,
               100 * (total - in_instructions) / total);
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto* command = app.add_subcommand("bench", "Measure prompt processing and generation speed (like llama-bench)");
  static BenchArgs args;
  command->add_option("PROGRAM", args.program, "Program file (.kst)")->required();
  command->add_option("-p,--n-prompt", args.prompt_lengths, "Prompt lengths to process, e.g. 128,512 (0: none)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-n,--n-gen", args.generate_lengths, "Token counts to generate, e.g. 128 (0: none)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-d,--n-depth", args.depths,
                      "Context depths the tests start at, e.g. 0,512 (the cache holds that many tokens, run "
                      "unmeasured before the test)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-t,--threads", args.threads, "Thread counts, e.g. 1,2 (0: every core)")
      ->delimiter(',')
      ->capture_default_str();
  command->add_option("-r,--repetitions", args.reps, "Measured repetitions per test")->capture_default_str();
  command->add_flag("--json", args.json,
                    "Print one JSON object: prefill_tok_s and decode_tok_s (first pp and tg test), load_ms, "
                    "peak_rss_bytes and every test");
  command->add_flag("--profile", args.profile,
                    "Also report the time per repetition in each op of each method (summed over its "
                    "instructions; the clock around every instruction adds well under a microsecond each)");
  command->add_option("--kernels", args.kernels, "CPU kernels: optimized or portable")->capture_default_str();
  command->add_option("--allocator", args.allocator, "I/O buffer allocator (heap, memfd, rpcmem)")
      ->capture_default_str();
  command->add_option("--backend-option", args.backend_options,
                      "Runtime option of a backend, NAME.KEY=VALUE (repeatable), as for kestrel run")
      ->allow_extra_args(false);
  command->callback([] {
    auto results = run_benchmarks(args);
    if (!results.ok()) {
      fmt::print(stderr, "kestrel bench: {}\n", results.error().to_string());
      set_exit_code(1);
      return;
    }
    if (args.json) {
      fmt::print("{}\n", to_json(args, *results).dump());
    } else {
      print_table(args, *results);
    }
  });
}

}  // namespace kestrel::tools
