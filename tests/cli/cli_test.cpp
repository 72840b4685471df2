// The kestrel binary end to end: create-model -> export -> inspect -> run, and the errors a
// user sees for bad input (exit code non-zero, message on stderr naming the problem).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "kestrel/fixtures/default_model.h"

namespace {

namespace fs = std::filesystem;

struct Output {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = fs::temp_directory_path() / ("kestrel-cli-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    ASSERT_EQ(run({"create-model", path("model")}).exit_code, 0);
    auto exported = run({"export", path("model"), "-o", path("model.kst"), "--prefill-step", "8", "--max-context",
                         "128"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
  }
  static void TearDownTestSuite() { fs::remove_all(dir_); }

  static std::string path(const std::string& name) { return (dir_ / name).string(); }

  static Output run(const std::vector<std::string>& args, const std::string& stdin_text = "") {
    std::string command = KESTREL_CLI;
    for (const auto& arg : args) {
      std::string quoted = "'";
      for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      command += " " + quoted + "'";
    }
    const std::string out_file = path("stdout.txt"), err_file = path("stderr.txt"), in_file = path("stdin.txt");
    std::ofstream(in_file) << stdin_text;
    command += " <" + in_file + " >" + out_file + " 2>" + err_file;
    Output output;
    const int status = std::system(command.c_str());
    output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    auto slurp = [](const std::string& file) {
      std::ifstream in(file, std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), {});
    };
    output.out = slurp(out_file);
    output.err = slurp(err_file);
    return output;
  }

  static fs::path dir_;
};

fs::path Cli::dir_;

TEST_F(Cli, InspectShowsContractMethodsAndArena) {
  auto out = run({"inspect", path("model.kst")});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_NE(out.out.find("io_contract = \"hf_static\""), std::string::npos) << out.out;
  EXPECT_NE(out.out.find("method 'prefill'"), std::string::npos);
  EXPECT_NE(out.out.find("method 'decode'"), std::string::npos);
  EXPECT_NE(out.out.find("arena bytes"), std::string::npos);
  EXPECT_NE(out.out.find("tokens: i64 [1, 8]"), std::string::npos);
}

TEST_F(Cli, RunJsonIsDeterministicForASeed) {
  const std::vector<std::string> args{"run", path("model.kst"), "-p", "The bird", "-n", "12", "--seed", "7",
                                      "--json", "--ignore-eos"};
  auto first = run(args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  auto json = nlohmann::json::parse(first.out);
  EXPECT_EQ(json["token_ids"].size(), 12u);
  EXPECT_FALSE(json["prompt_token_ids"].empty());
  EXPECT_EQ(json["stop_reason"], "max_new_tokens");
  for (const char* key : {"load_ms", "ttft_ms", "prefill_tokens_per_s", "decode_tokens_per_s", "peak_rss_bytes"})
    EXPECT_TRUE(json["stats"].contains(key)) << key;
  auto again = nlohmann::json::parse(run(args).out);
  EXPECT_EQ(again["text"], json["text"]) << "same seed, same text";
  EXPECT_EQ(again["token_ids"], json["token_ids"]);
}

TEST_F(Cli, GreedyStreamsThePromptAndContinuation) {
  auto out = run({"run", path("model.kst"), "--prompt", "Rain fell", "-n", "6", "--temperature", "0", "--stats"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_EQ(out.out.rfind("Rain fell", 0), 0u) << out.out;
  EXPECT_NE(out.err.find("decode"), std::string::npos);
  EXPECT_NE(out.err.find("peak RSS"), std::string::npos);
}

TEST_F(Cli, RepeatedStopFlagsTakeOneValueEach) {
  auto full = run({"run", path("model.kst"), "-p", "The bird", "-n", "16", "--temperature", "0", "--json"});
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::string text = nlohmann::json::parse(full.out)["text"];
  ASSERT_GE(text.size(), 6u);
  const std::string stop = text.substr(3, 2);
  // Flags before the positional must not swallow it.
  auto out = run({"run", "--stop", "never-generated", "--stop", stop, path("model.kst"), "-p", "The bird", "-n", "16",
                  "--temperature", "0", "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  auto json = nlohmann::json::parse(out.out);
  EXPECT_EQ(json["stop_reason"], "stop_string");
  EXPECT_EQ(json["text"], text.substr(0, text.find(stop)));
}

TEST_F(Cli, ChatKeepsTheSessionAcrossTurns) {
  auto out = run({"run", path("model.kst"), "--chat", "-n", "4", "--temperature", "0"}, "hello\nagain\n");
  ASSERT_EQ(out.exit_code, 0) << out.err;
  EXPECT_GE(std::count(out.out.begin(), out.out.end(), '>'), 3) << out.out;
}

TEST_F(Cli, OversizedPromptIsAClearError) {
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "the bird sang in the rain ";
  auto out = run({"run", path("model.kst"), "-p", long_prompt, "-n", "8"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("context is 128"), std::string::npos) << out.err;
}

TEST_F(Cli, CorruptProgramIsAClearError) {
  std::ifstream in(path("model.kst"), std::ios::binary);
  std::string bytes(std::istreambuf_iterator<char>(in), {});
  std::ofstream(path("truncated.kst"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto out = run({"run", path("truncated.kst"), "-p", "x"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("truncated.kst"), std::string::npos) << out.err;
  out = run({"inspect", path("missing.kst")});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("missing.kst"), std::string::npos) << out.err;
}

TEST_F(Cli, ExportErrorsNameTheProblem) {
  auto out = run({"export", path("nowhere"), "-o", path("x.kst")});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("nowhere"), std::string::npos) << out.err;
  out = run({"export", path("model"), "-o", path("x.kst"), "--dtype", "f8"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("--dtype"), std::string::npos) << out.err;
  out = run({"export", path("model"), "-o", path("x.kst"), "--backend", "qnm"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("did you mean 'qnn'"), std::string::npos) << out.err;
  out = run({"export", path("model"), "-o", path("x.kst"), "--backend", "qnn", "--option", "soc_modle=SM8650"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("soc_modle"), std::string::npos) << out.err;
  EXPECT_NE(out.err.find("soc_model"), std::string::npos) << out.err;
  out = run({"export", path("model"), "-o", path("x.kst"), "--prefill-step", "0"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("prefill step"), std::string::npos) << out.err;
}

TEST_F(Cli, QnnOptionsAreListedAndApplied) {
  auto list = run({"export", "--backend", "qnn", "--list-options"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  for (const char* name : {"soc_model", "skip_node_op_set", "htp_performance_mode", "use_fp16"})
    EXPECT_NE(list.out.find(name), std::string::npos) << name;
  std::ofstream(path("opts.json")) << R"({"soc_model": "SM8650", "htp_performance_mode": "burst"})";
  auto exported = run({"export", path("model"), "-o", path("qnn.kst"), "--prefill-step", "8", "--max-context", "64",
                       "--backend", "qnn", "--options-file", path("opts.json"), "--option",
                       "skip_node_op_set=index_copy"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("delegated"), std::string::npos) << exported.err;
  auto inspect = run({"inspect", path("qnn.kst")});
  ASSERT_EQ(inspect.exit_code, 0);
  EXPECT_NE(inspect.out.find("qnn"), std::string::npos);
  EXPECT_NE(inspect.out.find("SM8650"), std::string::npos) << inspect.out;
  EXPECT_NE(inspect.out.find("kernel index_copy"), std::string::npos) << "cache update stays portable";
  // Without the QNN libraries the program cannot run, and says why.
  auto ran = run({"run", path("qnn.kst"), "-p", "hi", "-n", "2"});
  EXPECT_NE(ran.exit_code, 0);
  EXPECT_NE(ran.err.find("qnn"), std::string::npos) << ran.err;
}

}  // namespace

// kestrel bench: a llama-bench style report, as a table or one JSON object.
TEST_F(Cli, BenchReportsEveryTestAndTheSummary) {
  auto out = run({"bench", path("model.kst"), "-p", "8,13", "-n", "4", "-t", "1,2", "-r", "2", "--json"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  auto json = nlohmann::json::parse(out.out);
  EXPECT_GT(json["prefill_tok_s"].get<double>(), 0);
  EXPECT_GT(json["decode_tok_s"].get<double>(), 0);
  EXPECT_GT(json["load_ms"].get<double>(), 0);
  EXPECT_GT(json["peak_rss_bytes"].get<int64_t>(), 0);
  const auto& tests = json["tests"];
  ASSERT_EQ(tests.size(), 6u);  // pp8, pp13, tg4 for each thread count
  const std::vector<std::string> names{"pp8", "pp13", "tg4", "pp8", "pp13", "tg4"};
  for (size_t i = 0; i < tests.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(tests[i]["test"], names[i]);
    EXPECT_EQ(tests[i]["threads"], i < 3 ? 1 : 2);
    EXPECT_EQ(tests[i]["samples_tok_s"].size(), 2u);
    EXPECT_GT(tests[i]["tok_s_mean"].get<double>(), 0);
    EXPECT_GE(tests[i]["tok_s_stddev"].get<double>(), 0);
  }
  // The summary is the first prompt and the first generation test.
  EXPECT_EQ(json["prefill_tok_s"], tests[0]["tok_s_mean"]);
  EXPECT_EQ(json["decode_tok_s"], tests[2]["tok_s_mean"]);
  // The exported program updates its caches in place: the runner copies nothing.
  EXPECT_EQ(tests[2]["cache_bytes_copied_per_decode_step"].get<double>(), 0.0);

  auto table = run({"bench", path("model.kst"), "-p", "8", "-n", "2", "-t", "1", "-r", "1"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("| pp8 |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("| tg2 |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("peak RSS"), std::string::npos);
}

TEST_F(Cli, BenchErrorsNameTheProblem) {
  auto too_long = run({"bench", path("model.kst"), "-p", "500", "-n", "0", "-r", "1"});
  EXPECT_NE(too_long.exit_code, 0);
  EXPECT_NE(too_long.err.find("pp500 needs 500 positions, but the program's context is 128"), std::string::npos)
      << too_long.err;
  auto no_reps = run({"bench", path("model.kst"), "-r", "0"});
  EXPECT_NE(no_reps.exit_code, 0);
  EXPECT_NE(no_reps.err.find("--repetitions must be >= 1"), std::string::npos) << no_reps.err;
}
