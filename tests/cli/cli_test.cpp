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

#include "cli/cli_fixture.h"
#include "kestrel/fixtures/default_model.h"

namespace {

using kestrel::testing::Cli;
using kestrel::testing::Output;
namespace fs = std::filesystem;

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
  EXPECT_NE(out.err.find("--prefill-step"), std::string::npos) << out.err;
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
  EXPECT_NE(ran.err.find("qnn.library=stand-in"), std::string::npos) << "names the way to run it here";
}

// A QNN program runs on the CPU stand-in and generates what the portable program generates;
// export lists the edge transforms and node ids; --backend-option is validated.
TEST_F(Cli, QnnProgramRunsOnTheStandIn) {
  auto exported = run({"export", path("model"), "-o", path("qnn_all.kst"), "--prefill-step", "8", "--max-context",
                       "128", "--backend", "qnn", "--option", "skip_node_id_set=3", "--show-nodes"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("edge transforms: qnn:narrow_index_inputs"), std::string::npos) << exported.err;
  EXPECT_NE(exported.out.find("nodes of method 'prefill'"), std::string::npos) << exported.out;
  EXPECT_NE(exported.out.find("portable: skip_node_id_set"), std::string::npos) << exported.out;
  auto inspect = run({"inspect", path("qnn_all.kst")});
  EXPECT_NE(inspect.out.find("nodes of method 'decode'"), std::string::npos) << inspect.out;

  const std::vector<std::string> generate{"-p", "The little bird", "-n", "16", "--temperature", "0", "--json"};
  auto args = [&](const std::string& program, std::vector<std::string> extra) {
    std::vector<std::string> all{"run", program};
    all.insert(all.end(), generate.begin(), generate.end());
    all.insert(all.end(), extra.begin(), extra.end());
    return all;
  };
  auto portable = run(args(path("model.kst"), {}));
  auto qnn = run(args(path("qnn_all.kst"), {"--backend-option", "qnn.library=stand-in"}));
  ASSERT_EQ(portable.exit_code, 0) << portable.err;
  ASSERT_EQ(qnn.exit_code, 0) << qnn.err;
  EXPECT_EQ(nlohmann::json::parse(qnn.out)["token_ids"], nlohmann::json::parse(portable.out)["token_ids"]);

  auto typo = run(args(path("qnn_all.kst"), {"--backend-option", "qnn.libary=stand-in"}));
  EXPECT_NE(typo.exit_code, 0);
  EXPECT_NE(typo.err.find("did you mean 'library'"), std::string::npos) << typo.err;
  auto backend = run(args(path("qnn_all.kst"), {"--backend-option", "qn.library=stand-in"}));
  EXPECT_NE(backend.exit_code, 0);
  EXPECT_NE(backend.err.find("unknown backend 'qn'"), std::string::npos) << backend.err;
  auto shape = run(args(path("qnn_all.kst"), {"--backend-option", "library=stand-in"}));
  EXPECT_NE(shape.exit_code, 0);
  EXPECT_NE(shape.err.find("NAME.KEY=VALUE"), std::string::npos) << shape.err;
}

}  // namespace
