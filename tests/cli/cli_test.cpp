// The kestrel binary end to end: create-model -> export -> inspect -> run, and the errors a
// user sees for bad input (exit code non-zero, message on stderr naming the problem).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cli/cli_fixture.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/fixtures/default_model.h"
#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/program/loaded_program.h"
#include "program/format.h"

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
  out = run({"export", path("model"), "-o", path("x.kst"), "--cache-dtype", "bf16"});
  EXPECT_NE(out.exit_code, 0);
  EXPECT_NE(out.err.find("--cache-dtype: cache dtype must be f32 or f16, got 'bf16'"), std::string::npos) << out.err;
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

// Prefill buckets from the command line: the program lists them, and generates what the
// single-step program generates.
TEST_F(Cli, ExtraPrefillStepsAddBuckets) {
  auto exported = run({"export", path("model"), "-o", path("buckets.kst"), "--prefill-step", "8", "--max-context",
                       "128", "--extra-prefill-steps", "32,16"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("method prefill_16  T=16"), std::string::npos) << exported.err;
  EXPECT_NE(exported.err.find("method prefill_32  T=32"), std::string::npos) << exported.err;
  auto inspect = run({"inspect", path("buckets.kst")});
  ASSERT_EQ(inspect.exit_code, 0);
  EXPECT_NE(inspect.out.find("prefill_steps = [8, 16, 32]"), std::string::npos) << inspect.out;
  const std::string prompt = "The bird sang of rain over the hills, and the river ran cold under the old stone bridge";
  auto want = run({"run", path("model.kst"), "-p", prompt, "-n", "8", "--temperature", "0", "--json"});
  auto got = run({"run", path("buckets.kst"), "-p", prompt, "-n", "8", "--temperature", "0", "--json"});
  ASSERT_EQ(want.exit_code, 0) << want.err;
  ASSERT_EQ(got.exit_code, 0) << got.err;
  EXPECT_EQ(nlohmann::json::parse(got.out)["text"], nlohmann::json::parse(want.out)["text"]);
  auto bad = run({"export", path("model"), "-o", path("x.kst"), "--extra-prefill-steps", "16,1"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--extra-prefill-steps"), std::string::npos) << bad.err;
  bad = run({"export", path("model"), "-o", path("x.kst"), "--max-context", "64", "--extra-prefill-steps", "128"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("extra prefill step 128 is outside [2, max context = 64]"), std::string::npos) << bad.err;
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

// ---- Program file integrity and export safety ----------------------------------------------

namespace fixtures = kestrel::fixtures;
namespace program = kestrel::program;

std::vector<uint8_t> file_bytes(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& file, const std::vector<uint8_t>& bytes) {
  std::ofstream(file, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                              static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> temporaries_in(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().filename().string().find(".tmp.") != std::string::npos) names.push_back(entry.path().string());
  return names;
}

TEST_F(Cli, ExportRefusesToOverwriteWhatItReads) {
  const auto weights = file_bytes(path("model/model.safetensors"));
  fs::create_symlink(path("model/model.safetensors"), path("weights-link.safetensors"));
  for (const std::string& output : {path("model/model.safetensors"), path("model/./config.json"),
                                    path("weights-link.safetensors"), path("model") + "//tokenizer.json"}) {
    auto out = run({"export", path("model"), "-o", output});
    EXPECT_NE(out.exit_code, 0) << output;
    EXPECT_NE(out.err.find("refusing to write the program to '" + output + "'"), std::string::npos) << out.err;
    EXPECT_NE(out.err.find("a file of the checkpoint directory this export reads"), std::string::npos) << out.err;
  }
  EXPECT_EQ(file_bytes(path("model/model.safetensors")), weights);
  // An earlier program in the checkpoint directory may be replaced.
  ASSERT_EQ(run({"export", path("model"), "-o", path("model/program.kst"), "-q"}).exit_code, 0);
  auto again = run({"export", path("model"), "-o", path("model/program.kst"), "-q"});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  fs::remove(path("model/program.kst"));
}

TEST_F(Cli, ExportRefusesToOverwriteALlama2cCheckpointOrTokenizer) {
  fixtures::FixtureConfig config;
  config.tie_word_embeddings = true;
  config.vocab_size = 512;
  ASSERT_TRUE(fixtures::write_llama2c_checkpoint(path("l2c.bin"), config).ok());
  write_file(path("l2c-tokenizer.bin"), fixtures::build_llama2c_tokenizer_bin(
                                            fixtures::build_llama2c_vocab(fixtures::default_corpus(), config.vocab_size)));
  fs::create_symlink(path("l2c-tokenizer.bin"), path("tokenizer-link.bin"));
  const auto checkpoint = file_bytes(path("l2c.bin"));
  for (const std::string& output : {path("l2c.bin"), path("l2c-tokenizer.bin"), path("tokenizer-link.bin")}) {
    auto out = run({"export", path("l2c.bin"), "--tokenizer", path("l2c-tokenizer.bin"), "-o", output});
    EXPECT_NE(out.exit_code, 0) << output;
    EXPECT_NE(out.err.find("which this export reads"), std::string::npos) << out.err;
  }
  EXPECT_EQ(file_bytes(path("l2c.bin")), checkpoint);
  auto ok = run({"export", path("l2c.bin"), "--tokenizer", path("l2c-tokenizer.bin"), "-o", path("l2c.kst"), "-q"});
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
}

// The file offset of each segment of a program, from the loader.
std::vector<std::pair<uint64_t, uint64_t>> segment_ranges(const std::string& file) {
  auto loaded = program::LoadedProgram::load_file(file);
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  if (!loaded.ok()) return ranges;
  for (uint32_t i = 0; i < (*loaded)->num_segments(); ++i)
    ranges.emplace_back((*loaded)->segment(i).data() - (*loaded)->file_span().data(), (*loaded)->segment(i).size());
  return ranges;
}

TEST_F(Cli, DamagedTokenizerOrWeightsFailInspectAndRun) {
  const auto good = file_bytes(path("model.kst"));
  const auto ranges = segment_ranges(path("model.kst"));
  ASSERT_EQ(ranges.size(), 2u);  // constants, tokenizer
  const struct {
    size_t segment;
    const char* name;
  } cases[] = {{0, "segment 0 (constants)"}, {1, "segment 1 (tokenizer)"}};
  for (const auto& c : cases) {
    auto bytes = good;
    bytes[ranges[c.segment].first + ranges[c.segment].second / 2] ^= 0x10;
    const std::string damaged = path("damaged.kst");
    write_file(damaged, bytes);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"inspect", damaged}, std::vector<std::string>{"run", damaged, "-p", "x", "-n", "1"}}) {
      auto out = run(args);
      EXPECT_EQ(out.exit_code, 1) << args[0];
      EXPECT_NE(out.err.find(c.name), std::string::npos) << out.err;
      EXPECT_NE(out.err.find("checksum mismatch"), std::string::npos) << out.err;
    }
    auto unchecked = run({"inspect", damaged, "--no-verify"});
    EXPECT_EQ(unchecked.exit_code, 0) << unchecked.err;
    EXPECT_NE(unchecked.out.find("checksums: xxh3-64, not verified"), std::string::npos) << unchecked.out;
  }
  // A damaged weight byte does not stop a run that skips the checks.
  auto bytes = good;
  bytes[ranges[0].first + ranges[0].second / 2] ^= 0x10;
  write_file(path("damaged.kst"), bytes);
  auto ran = run({"run", path("damaged.kst"), "--no-verify", "-p", "x", "-n", "2", "--temperature", "0"});
  EXPECT_EQ(ran.exit_code, 0) << ran.err;
}

// Arena sizes that once passed inspect and then made run abort (bad_alloc), corrupt the heap
// (2^64-1 rounded up to 0) or take 2 GiB for a 3.6 MB model are refused by both, cleanly.
TEST_F(Cli, ImplausibleArenaSizesAreRefused) {
  auto loaded = program::LoadedProgram::load_file(path("model.kst"));
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  for (uint64_t arena : {uint64_t{1} << 31, uint64_t{1} << 40, uint64_t{1} << 63, ~uint64_t{0}}) {
    program::ProgramSpec spec = (*loaded)->spec();
    for (uint32_t i = 0; i < (*loaded)->num_segments(); ++i) {
      const auto segment = (*loaded)->segment(i);
      spec.segments.emplace_back(std::vector<uint8_t>(segment.begin(), segment.end()));
    }
    for (auto& method : spec.methods)
      if (method.name == "decode") method.arena_bytes = arena;
    program::format::SerializeOptions unchecked;
    unchecked.validate = false;
    auto bytes = program::format::serialize(spec, unchecked);
    ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
    write_file(path("arena.kst"), *bytes);
    const std::string expected = fmt::format("method 'decode': arena_bytes {} is more than its", arena);
    for (const std::vector<std::string>& args : {std::vector<std::string>{"inspect", path("arena.kst")},
                                                 std::vector<std::string>{"run", path("arena.kst"), "-p", "x", "-n", "1"}}) {
      auto out = run(args);
      EXPECT_EQ(out.exit_code, 1) << args[0] << " with arena " << arena << ": " << out.err;
      EXPECT_NE(out.err.find(expected), std::string::npos) << out.err;
    }
  }
}

// SIGTERM while `kestrel export` writes: the process ends by the signal and neither the temporary
// file nor the program is left. The export is stopped at its first progress line (the temporary
// file exists then), sent SIGTERM, and continued.
TEST_F(Cli, SigtermDuringExportLeavesNoTemporaryFile) {
  fixtures::FixtureConfig config;
  config.hidden_size = 512;
  config.intermediate_size = 1536;
  config.num_heads = 8;
  config.num_kv_heads = 4;
  config.num_layers = 4;
  config.vocab_size = 4096;
  const std::string checkpoint = path("larger");
  ASSERT_TRUE(fixtures::write_hf_checkpoint(checkpoint, config).ok());
  const fs::path out_dir = dir_ / "sigterm";
  fs::create_directories(out_dir);
  const std::string output = (out_dir / "larger.kst").string();

  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::dup2(pipe_fds[1], STDERR_FILENO);
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    ::execl(KESTREL_CLI, KESTREL_CLI, "export", checkpoint.c_str(), "-o", output.c_str(), "--dtype", "q8",
            "--progress", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(pipe_fds[1]);
  FILE* err = ::fdopen(pipe_fds[0], "r");
  ASSERT_NE(err, nullptr);
  char line[4096];
  bool writing = false;
  while (!writing && std::fgets(line, sizeof(line), err) != nullptr)
    writing = std::string(line).find("writing " + output + ": ") != std::string::npos;
  ASSERT_TRUE(writing) << "no progress line from the export";
  ASSERT_EQ(::kill(child, SIGSTOP), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(status)) << "the export ended before it could be stopped mid-write";
  EXPECT_EQ(temporaries_in(out_dir).size(), 1u) << "stopped mid-write, the temporary file exists";
  ASSERT_EQ(::kill(child, SIGTERM), 0);
  ASSERT_EQ(::kill(child, SIGCONT), 0);
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  std::fclose(err);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  EXPECT_TRUE(temporaries_in(out_dir).empty());
  EXPECT_FALSE(fs::exists(output));
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

// kestrel bench --profile: the time per repetition in each op of each method.
TEST_F(Cli, BenchProfileChargesEveryOpOfTheMethodsThatRan) {
  auto out = run({"bench", path("model.kst"), "-p", "8", "-n", "4", "-t", "1", "-r", "2", "--json", "--profile"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto tests = nlohmann::json::parse(out.out)["tests"];
  ASSERT_EQ(tests.size(), 2u);
  for (const auto& test : tests) {
    SCOPED_TRACE(test["test"].get<std::string>());
    const auto& profile = test["profile"];
    const double total = profile["ms_per_rep"].get<double>();
    EXPECT_GT(total, 0);
    double sum = 0;
    std::set<std::string> ops;
    for (const auto& row : profile["instructions"]) {
      EXPECT_GE(row["ms"].get<double>(), 0);
      EXPECT_GT(row["calls"].get<double>(), 0);
      sum += row["ms"].get<double>();
      ops.insert(row["method"].get<std::string>() + "/" + row["op"].get<std::string>());
    }
    // The instructions ran inside the measured time, and the model's ops are all there.
    EXPECT_GT(sum, 0);
    EXPECT_LE(sum, total * 1.0001);
    const std::string method = test["test"] == "tg4" ? "decode" : "prefill";
    for (const char* op : {"linear", "attention", "rms_norm", "embedding"})
      EXPECT_TRUE(ops.count(method + "/" + op)) << method << "/" << op;
    if (test["test"] == "tg4") {
      // Four decode steps and nothing else: every decode instruction ran 4 times per repetition.
      for (const auto& row : profile["instructions"]) {
        EXPECT_EQ(row["method"], "decode");
        const double calls = row["calls"].get<double>();
        EXPECT_EQ(std::fmod(calls, 4.0), 0.0) << row["op"];
      }
    }
  }
  auto plain = run({"bench", path("model.kst"), "-p", "8", "-n", "0", "-t", "1", "-r", "1", "--json"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out)["tests"][0].contains("profile"));

  auto table = run({"bench", path("model.kst"), "-p", "8", "-n", "0", "-t", "1", "-r", "1", "--profile"});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("profile of pp8, 1 threads, per repetition"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("| prefill | linear |"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("| (outside instructions) |"), std::string::npos) << table.out;
}

// kestrel bench -d: tests start at a context depth; the tokens before it are not measured.
TEST_F(Cli, BenchStartsTestsAtEachDepth) {
  auto out = run({"bench", path("model.kst"), "-p", "8", "-n", "4", "-d", "0,100", "-t", "1", "-r", "2", "--json",
                  "--profile"});
  ASSERT_EQ(out.exit_code, 0) << out.err;
  const auto tests = nlohmann::json::parse(out.out)["tests"];
  ASSERT_EQ(tests.size(), 4u);
  const std::vector<std::string> names{"pp8", "tg4", "pp8@d100", "tg4@d100"};
  for (size_t i = 0; i < tests.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(tests[i]["test"], names[i]);
    EXPECT_EQ(tests[i]["n_depth"], i < 2 ? 0 : 100);
    EXPECT_GT(tests[i]["tok_s_mean"].get<double>(), 0);
  }
  // The runner refuses positions past the tokens it has run, so tg4@d100 running at all shows
  // the 100 tokens were filled; the profile shows the fill is not counted: four decode steps
  // per repetition and no prefill.
  for (const auto& row : tests[3]["profile"]["instructions"]) {
    EXPECT_EQ(row["method"], "decode");
    EXPECT_EQ(std::fmod(row["calls"].get<double>(), 4.0), 0.0) << row["op"];
  }
  // The same work per repetition as at depth 0.
  auto calls = [](const nlohmann::json& test) {
    std::map<std::string, double> by_op;
    for (const auto& row : test["profile"]["instructions"])
      by_op[row["method"].get<std::string>() + "/" + row["op"].get<std::string>()] = row["calls"].get<double>();
    return by_op;
  };
  EXPECT_EQ(calls(tests[0]), calls(tests[2]));
  EXPECT_EQ(calls(tests[1]), calls(tests[3]));

  auto too_deep = run({"bench", path("model.kst"), "-p", "0", "-n", "4", "-d", "125", "-r", "1"});
  EXPECT_NE(too_deep.exit_code, 0);
  EXPECT_NE(too_deep.err.find("test tg4@d125 needs 129 positions, but the program's context is 128"),
            std::string::npos)
      << too_deep.err;
  auto negative = run({"bench", path("model.kst"), "-d", "-1", "-r", "1"});
  EXPECT_NE(negative.exit_code, 0);
  EXPECT_NE(negative.err.find("-d: depths must be >= 0, got -1"), std::string::npos) << negative.err;
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
