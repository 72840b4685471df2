// decode_vs_read PROGRAM [TOKENS] [DEPTH] [ROUNDS]: a program's one-thread decode steps against
// a read of the bytes they must stream, alternated step by step so that a host whose speed
// drifts by 20-40% within minutes slows both alike.
//
// The bytes a decode step must read are the weights of the decode method's linear
// instructions (each constant counted once; an embedding table read one row a step is not
// counted unless a linear reads it too, as a tied classifier does). Each round generates
// TOKENS tokens one decode step at a time from position DEPTH (the DEPTH tokens before it run
// once, unmeasured); after every step one read of a buffer of those bytes follows, in turn one
// of the ways read_bandwidth reads (one stream or four side by side, 0, 1 or 2 KiB of software
// prefetch, huge or 4 KiB pages). Every way's rate is its bytes over its summed time (a mean,
// as the decode's is), the best of them is the bound, and decode_share is the decode steps'
// rate against it. The same steps as `kestrel bench -p 0 -n TOKENS -d DEPTH -t 1`, so the share
// covers the whole step: linears, attention, the small ops and the runtime between them.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kestrel/api/kernel_choice.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/fixtures/bench_tokens.h"
#include "kestrel/llm/runner.h"
#include "kestrel/program/io_contract.h"
#include "kestrel/program/loaded_program.h"
#include "read_stream.h"

namespace {

using kestrel::Result;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Bytes of the distinct constants the linear instructions of `method` read.
Result<uint64_t> linear_weight_bytes(const std::string& path, const std::string& method) {
  KESTREL_ASSIGN_OR_RETURN(auto program, kestrel::program::LoadedProgram::load_file(path));
  for (const kestrel::program::MethodSpec& spec : program->spec().methods) {
    if (spec.name != method) continue;
    std::map<std::pair<uint32_t, uint64_t>, uint64_t> constants;  // (segment, offset) -> bytes
    for (const kestrel::program::Instruction& instruction : spec.instructions) {
      const auto* call = std::get_if<kestrel::program::KernelCall>(&instruction);
      if (call == nullptr || call->op != "linear") continue;
      for (int32_t input : call->inputs) {
        const kestrel::program::ValueSpec& value = spec.values[static_cast<size_t>(input)];
        if (value.kind == kestrel::program::ValueKind::kConstant)
          constants[{value.constant.segment, value.constant.offset}] = value.constant.nbytes;
      }
    }
    uint64_t bytes = 0;
    for (const auto& [where, n] : constants) bytes += n;
    return bytes;
  }
  return kestrel::make_error(kestrel::ErrorCode::kNotFound, "{} has no method '{}'", path, method);
}

int fail(const std::string& message) {
  std::fprintf(stderr, "decode_vs_read: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "-h" || std::string(argv[1]) == "--help") {
    std::fprintf(stderr, "usage: decode_vs_read PROGRAM [TOKENS=128] [DEPTH=0] [ROUNDS=5]\n");
    return argc < 2 ? 2 : 0;
  }
  const std::string path = argv[1];
  const int64_t n_tokens = argc > 2 ? std::atoll(argv[2]) : 128;
  const int64_t depth = argc > 3 ? std::atoll(argv[3]) : 0;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 5;
  if (n_tokens < 1 || depth < 0 || rounds < 1) return fail("TOKENS and ROUNDS must be >= 1 and DEPTH >= 0");

  kestrel::llm::RunnerOptions options;
  auto kernels = kestrel::api::kernel_registry_for("optimized", 1);
  if (!kernels.ok()) return fail(kernels.error().to_string());
  options.kernels = *kernels;
  auto runner = kestrel::llm::Runner::load(path, options);
  if (!runner.ok()) return fail(runner.error().to_string());
  kestrel::llm::IOManager& io = (*runner)->io_manager();
  const kestrel::llm::ModelInfo& info = (*runner)->model_info();
  if (depth + n_tokens > info.max_context)
    return fail(fmt::format("DEPTH + TOKENS = {} is more than the program's context {}", depth + n_tokens,
                            info.max_context));
  // The hf_static contract names its decode method in the metadata.
  const auto& metadata = (*runner)->program_metadata();
  const auto named = metadata.find(kestrel::contract::hf_static::kDecodeMethod);
  const auto* decode_method = named == metadata.end() ? nullptr : std::get_if<std::string>(&named->second);
  if (decode_method == nullptr) return fail("the program's metadata names no decode_method");
  auto weight_bytes = linear_weight_bytes(path, *decode_method);
  if (!weight_bytes.ok()) return fail(weight_bytes.error().to_string());
  if (*weight_bytes == 0) return fail(fmt::format("the method '{}' has no linear weights", *decode_method));
  const size_t bytes = *weight_bytes;

  const kestrel::bench::MappedWords huge(bytes, true), small(bytes, false);
  if (huge.words() == nullptr || small.words() == nullptr) return fail("cannot map the read buffers");
  struct ReadWay {
    const kestrel::bench::MappedWords* buffer;
    const char* pages;
    size_t streams, prefetch_bytes;
    double seconds = 0;
    int64_t reads = 0;
  };
  std::vector<ReadWay> ways{{&huge, "huge", 1, 0},    {&huge, "huge", 4, 0},   {&huge, "huge", 4, 1024},
                            {&huge, "huge", 4, 2048}, {&small, "4k", 4, 1024}};

  // The tokens of `kestrel bench -p 0 -n TOKENS -d DEPTH`: the context, then the generated ones.
  const std::vector<int64_t> context = kestrel::fixtures::bench_tokens(depth, info.vocab_size);
  const std::vector<int64_t> tokens = kestrel::fixtures::bench_tokens(n_tokens, info.vocab_size);
  auto fill = [&]() -> kestrel::Status {
    io.reset();
    if (depth == 0) return kestrel::ok_status();
    KESTREL_RETURN_IF_ERROR(io.forward(context, 0));
    return kestrel::ok_status();
  };
  double decode_seconds = 0;
  int64_t steps = 0;
  uint64_t sink = 0;
  size_t next_way = 0;
  for (int round = 0; round <= rounds; ++round) {  // round 0 warms up, unmeasured
    if (auto status = fill(); !status.ok()) return fail(status.error().to_string());
    for (int64_t i = 0; i < n_tokens; ++i) {
      auto start = Clock::now();
      auto status = io.forward(std::span<const int64_t>(&tokens[static_cast<size_t>(i)], 1), depth + i);
      const double step = seconds_since(start);
      if (!status.ok()) return fail(status.error().to_string());
      ReadWay& way = ways[next_way];
      next_way = (next_way + 1) % ways.size();
      start = Clock::now();
      sink += kestrel::bench::sum_words(way.buffer->words(), bytes / sizeof(uint64_t), way.streams,
                                        way.prefetch_bytes / sizeof(uint64_t));
      const double read = seconds_since(start);
      if (round == 0) continue;
      decode_seconds += step;
      ++steps;
      way.seconds += read;
      ++way.reads;
    }
  }

  nlohmann::json out;
  out["program"] = path;
  out["threads"] = 1;
  out["tokens"] = n_tokens;
  out["depth"] = depth;
  out["rounds"] = rounds;
  out["weight_bytes"] = bytes;
  const double decode_gb_s = static_cast<double>(bytes) * static_cast<double>(steps) / decode_seconds / 1e9;
  out["decode_tok_s"] = static_cast<double>(steps) / decode_seconds;
  out["decode_gb_s"] = decode_gb_s;
  double best = 0;
  for (const ReadWay& way : ways) {
    if (way.reads == 0) continue;
    const double gb_s = static_cast<double>(bytes) * static_cast<double>(way.reads) / way.seconds / 1e9;
    out["read_gb_s_by_way"][fmt::format("{}_s{}_pf{}", way.pages, way.streams, way.prefetch_bytes)] = gb_s;
    best = std::max(best, gb_s);
  }
  out["read_gb_s"] = best;
  out["decode_share"] = decode_gb_s / best;
  out["checksum"] = sink % 1000;
  std::printf("%s\n", out.dump().c_str());
  return 0;
}
