// Hostile and mistaken command lines: each gets a clear error (naming the flag, file or
// command at fault) or the documented behaviour, never a crash, a hang or silent nonsense.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli_fixture.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "support/expect_contains.h"

namespace kestrel::testing {
namespace {

namespace fs = std::filesystem;

using CliInput = Cli;

// Fails with a message on stderr and nothing on stdout.
void expect_refused(const Output& out, const std::string& message) {
  EXPECT_NE(out.exit_code, 0);
  EXPECT_CONTAINS(out.err, message);
  EXPECT_EQ(out.out, "") << "nothing may be printed before the error";
}

TEST_F(CliInput, DirectoriesWhereFilesAreExpected) {
  fs::create_directories(path("a_dir"));
  const std::string bin = path("model.bin");
  ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin, fixtures::FixtureConfig{}).ok());
  expect_refused(run({"export", bin, "-o", path("x.kst"), "--tokenizer", path("a_dir")}), "is a directory");
  expect_refused(run({"export", path("model"), "-o", path("x.kst"), "--backend", "qnn", "--options-file",
                      path("a_dir")}),
                 "options file '" + path("a_dir") + "' is a directory");
  expect_refused(run({"run", path("model.kst"), "--prompt-file", path("a_dir")}),
                 "prompt file '" + path("a_dir") + "' is a directory");
  expect_refused(run({"run", path("model.kst"), "--messages", path("a_dir")}), "is a directory");
}

TEST_F(CliInput, EndlessInputIsBounded) {
  expect_refused(run({"run", path("model.kst"), "--prompt-file", "/dev/zero"}),
                 "prompt file '/dev/zero' is larger than the limit");
  auto chat = run({"run", path("model.kst"), "--chat"}, "", "/dev/zero");
  EXPECT_NE(chat.exit_code, 0);
  EXPECT_CONTAINS(chat.err, "a line of standard input is longer than");
}

TEST_F(CliInput, ALlama2cCheckpointNeedsTheTokenizerFlag) {
  const std::string bin = path("needs_tokenizer.bin");
  ASSERT_TRUE(fixtures::write_llama2c_checkpoint(bin, fixtures::FixtureConfig{}).ok());
  auto out = run({"export", bin, "-o", path("x.kst")});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_CONTAINS(out.err, "pass it with --tokenizer FILE");
}

TEST_F(CliInput, DamagedTokenizerJsonFailsAtExportNotAtRun) {
  fs::copy(path("model"), path("bad_tokenizer"), fs::copy_options::recursive);
  std::ofstream(path("bad_tokenizer/tokenizer.json"), std::ios::trunc) << R"({"model": {"type": "BPE", "vocab": {)";
  auto out = run({"export", path("bad_tokenizer"), "-o", path("bad.kst")});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_CONTAINS(out.err, "tokenizer.json");
  EXPECT_FALSE(fs::exists(path("bad.kst")));
}

TEST_F(CliInput, AProgramWithoutTokenizerRunsFromTokenIds) {
  fs::copy(path("model"), path("no_tokenizer"), fs::copy_options::recursive);
  fs::remove(path("no_tokenizer/tokenizer.json"));
  auto exported = run({"export", path("no_tokenizer"), "-o", path("ids.kst"), "--max-context", "64"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_CONTAINS(exported.err, "warning: " + path("no_tokenizer") + " has no tokenizer");
  EXPECT_CONTAINS(exported.err, "--prompt-ids");

  expect_refused(run({"run", path("ids.kst"), "-p", "hello"}), "kestrel run --prompt-ids");
  auto ran = run({"run", path("ids.kst"), "--prompt-ids", "510, 72,105", "-n", "5", "--temperature", "0",
                  "--ignore-eos"});
  ASSERT_EQ(ran.exit_code, 0) << ran.err;
  auto json_run = run({"run", path("ids.kst"), "--prompt-ids", "510,72,105", "-n", "5", "--temperature", "0",
                       "--ignore-eos", "--json"});
  ASSERT_EQ(json_run.exit_code, 0) << json_run.err;
  const auto json = nlohmann::json::parse(json_run.out);
  EXPECT_EQ(json["prompt_token_ids"], nlohmann::json({510, 72, 105}));
  ASSERT_EQ(json["token_ids"].size(), 5u);
  std::string ids;
  for (const auto& id : json["token_ids"]) {
    if (!ids.empty()) ids += ' ';
    ids += std::to_string(id.get<int64_t>());
  }
  EXPECT_EQ(ran.out, ids + "\n") << "the generated ids are printed";

  expect_refused(run({"run", path("ids.kst"), "--prompt-ids", "1,x"}), "--prompt-ids: 'x' is not a token id");
  expect_refused(run({"run", path("ids.kst"), "--prompt-ids", "1,99999"}), "prompt token id 99999 is outside");
}

TEST_F(CliInput, HugeTokenCountsFailBeforeGenerating) {
  for (const char* n : {"9223372036854775807", "9223372036854775000"}) {
    for (bool json : {false, true}) {
      std::vector<std::string> args{"run", path("model.kst"), "-p", "The bird", "-n", n};
      if (json) args.push_back("--json");
      auto out = run(args);
      expect_refused(out, "new tokens");
      EXPECT_CONTAINS(out.err, "the program's context is 128");
    }
  }
  // Past what an int64 holds: named, not saturated.
  expect_refused(run({"run", path("model.kst"), "-p", "x", "-n", "99999999999999999999999"}),
                 "--max-new-tokens: must be an integer >= 0, got '99999999999999999999999'");
  expect_refused(run({"run", path("model.kst"), "-p", "x", "-n", "-3"}), "--max-new-tokens");
  expect_refused(run({"run", path("model.kst"), "-p", "x", "-n", "0x10"}), "--max-new-tokens");
}

TEST_F(CliInput, SeedsAreCheckedNotWrappedOrSaturated) {
  expect_refused(run({"run", path("model.kst"), "-p", "x", "--seed", "-1"}), "--seed: must be an integer in [0, ");
  expect_refused(run({"run", path("model.kst"), "-p", "x", "--seed", "18446744073709551616"}),
                 "got '18446744073709551616'");
  auto top = run({"run", path("model.kst"), "-p", "The bird", "-n", "3", "--seed", "18446744073709551615", "--json"});
  ASSERT_EQ(top.exit_code, 0) << top.err;
  EXPECT_EQ(nlohmann::json::parse(top.out)["seed"].get<uint64_t>(), 18446744073709551615ull);
  // Different large seeds give different streams (they were all one saturated value before).
  auto other = run({"run", path("model.kst"), "-p", "The bird", "-n", "3", "--seed", "18446744073709551614", "--json"});
  ASSERT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(nlohmann::json::parse(other.out)["seed"].get<uint64_t>(), 18446744073709551614ull);
}

TEST_F(CliInput, TwoPromptSourcesAreRefused) {
  std::ofstream(path("prompt.txt")) << "from the file";
  expect_refused(run({"run", path("model.kst"), "--prompt-file", path("prompt.txt"), "--prompt", "p"}),
                 "--prompt excludes --prompt-file");
  expect_refused(run({"run", path("model.kst"), "--chat", "--prompt", "p"}), "--prompt excludes --chat");
  expect_refused(run({"run", path("model.kst"), "--prompt-ids", "1", "--prompt", "p"}), "excludes");
  // One source alone works.
  auto file = run({"run", path("model.kst"), "--prompt-file", path("prompt.txt"), "-n", "2", "--temperature", "0"});
  ASSERT_EQ(file.exit_code, 0) << file.err;
  EXPECT_EQ(file.out.rfind("from the file", 0), 0u) << file.out;
}

TEST_F(CliInput, ExportFlagsOutOfRange) {
  for (const char* value : {"0", "-1", "abc"})
    expect_refused(run({"export", path("model"), "-o", path("x.kst"), "--max-context", value}),
                   std::string("--max-context: must be an integer >= 1, got '") + value + "'");
  std::ofstream(path("bad_options.json")) << R"({"soc_model": "SM8650",)";
  expect_refused(run({"export", path("model"), "-o", path("x.kst"), "--backend", "qnn", "--options-file",
                      path("bad_options.json")}),
                 "options file '" + path("bad_options.json") + "' is not valid JSON (at byte");
  std::ofstream(path("list_options.json")) << R"(["soc_model"])";
  expect_refused(run({"export", path("model"), "-o", path("x.kst"), "--backend", "qnn", "--options-file",
                      path("list_options.json")}),
                 "holds a JSON array, not an object of options");
}

TEST_F(CliInput, AnEmptyStopStringIsRefused) {
  expect_refused(run({"run", path("model.kst"), "-p", "x", "--stop", ""}), "--stop: must not be empty");
}

TEST_F(CliInput, AnUnknownCommandIsNamed) {
  auto out = run({"frobnicate"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_CONTAINS(out.err, "unknown command 'frobnicate'");
  EXPECT_CONTAINS(out.err, "export");
  out = run({"expotr", path("model")});
  EXPECT_CONTAINS(out.err, "did you mean 'export'?");
  // Known commands and global flags still work.
  EXPECT_EQ(run({"--version"}).exit_code, 0);
}

TEST_F(CliInput, ThePromptIsNotEchoedWhenTheRequestIsRefused) {
  expect_refused(run({"run", path("model.kst"), "-p", "ECHO-ME", "--temperature", "-1"}), "temperature -1");
  expect_refused(run({"run", path("model.kst"), "-p", "ECHO-ME", "--top-p", "0"}), "top_p");
  std::string long_prompt;
  for (int i = 0; i < 200; ++i) long_prompt += "ECHO ";
  expect_refused(run({"run", path("model.kst"), "-p", long_prompt}), "context is 128");
}

TEST_F(CliInput, AFullChatContextSaysHowToGoOn) {
  auto out = run({"run", path("model.kst"), "--chat", "-n", "120", "--temperature", "0", "--ignore-eos"},
                 "the bird sang\nand sang again\n/reset\nonce more\n");
  EXPECT_EQ(out.exit_code, 0) << out.err;
  EXPECT_CONTAINS(out.err, "context is 128");
  EXPECT_CONTAINS(out.err, "type /reset to start a new one");
  EXPECT_CONTAINS(out.err, "(conversation cleared)");
}

// Rewrites one tensor of model.safetensors with `value` everywhere (an f32 checkpoint).
void poison_tensor(const std::string& file, const std::string& name, float value) {
  std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
  uint64_t length = 0;
  f.read(reinterpret_cast<char*>(&length), 8);
  std::string header(length, '\0');
  f.read(header.data(), static_cast<std::streamsize>(length));
  const auto entry = nlohmann::json::parse(header).at(name);
  ASSERT_EQ(entry.at("dtype"), "F32");
  const uint64_t begin = entry.at("data_offsets")[0], end = entry.at("data_offsets")[1];
  f.seekp(static_cast<std::streamoff>(8 + length + begin));
  for (uint64_t i = begin; i < end; i += 4) f.write(reinterpret_cast<const char*>(&value), 4);
}

TEST_F(CliInput, NonFiniteLogitsAreAnErrorNamingTheMethodAndPosition) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
    SCOPED_TRACE(bad);
    fs::remove_all(path("poisoned"));
    fs::copy(path("model"), path("poisoned"), fs::copy_options::recursive);
    poison_tensor(path("poisoned/model.safetensors"), "model.norm.weight", bad);
    auto exported = run({"export", path("poisoned"), "-o", path("poisoned.kst"), "--prefill-step", "4",
                         "--max-context", "64"});
    ASSERT_EQ(exported.exit_code, 0) << exported.err;
    auto out = run({"run", path("poisoned.kst"), "-p", "The bird", "-n", "4"});
    EXPECT_NE(out.exit_code, 0);
    EXPECT_CONTAINS(out.err, "non-finite logit");
    EXPECT_CONTAINS(out.err, "processing the prompt");
    EXPECT_TRUE(out.err.find("method 'prefill'") != std::string::npos ||
                out.err.find("method 'decode'") != std::string::npos)
        << out.err;
    EXPECT_CONTAINS(out.err, "at position");
    EXPECT_EQ(out.out, "");
  }
}

}  // namespace
}  // namespace kestrel::testing
