// describe_program: what `kestrel inspect` prints.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "kestrel/program/describe.h"
#include "kestrel/program/writer.h"
#include "program/program_builders.h"

namespace kestrel::program {
namespace {

std::string describe(const ProgramSpec& spec) {
  auto bytes = serialize_program(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = LoadedProgram::load_bytes(*bytes);
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  return loaded.ok() ? describe_program(**loaded) : "";
}

void expect_line(const std::string& text, const std::string& line) {
  EXPECT_NE(text.find("\n" + line + "\n"), std::string::npos) << "missing line:\n" << line << "\nin:\n" << text;
}

TEST(DescribeProgram, RichProgram) {
  const ProgramSpec spec = testing::rich_program();
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok());
  const std::string text = describe(spec);
  EXPECT_EQ(text.rfind("Kestrel program\n", 0), 0u) << text;
  expect_line(text, "  format version: 2");
  expect_line(text, "  program version: 1");
  expect_line(text, fmt::format("  file bytes: {}", bytes->size()));

  expect_line(text, "metadata (8):");
  expect_line(text, "  big_list = [0, 1, 2, 3, 4, 5, 6, 7, ... (20 items)]");
  expect_line(text, "  eos_ids = [1, 2]");
  expect_line(text, "  io_contract = \"hf_static\"");
  expect_line(text, "  io_contract_version = 1");
  expect_line(text, "  names = [\"alpha\", \"beta\"]");
  expect_line(text, "  negative = -42");
  expect_line(text, "  temperature = 0.75");
  expect_line(text, "  use_cache = true");

  expect_line(text, "methods (2):");
  expect_line(text, "  method 'prefill'");
  expect_line(text, "    arena bytes: 256");
  expect_line(text, "    values: 10 (2 input, 1 output, 3 constant, 3 intermediate, 1 alias)");
  expect_line(text, "    inputs (2):");
  expect_line(text, "      [0] tokens: i64 [1, 4]");
  expect_line(text, "      [1] positions: i64 [4]");
  expect_line(text, "    outputs (1):");
  expect_line(text, "      [0] logits: f32 [1, 4, 8]");
  expect_line(text, "    instructions: 4 (3 kernel calls, 1 delegate call)");
  expect_line(text, "      kernel add: 1");
  expect_line(text, "      kernel embedding: 1");
  expect_line(text, "      kernel linear: 1");
  expect_line(text, "      delegate qnn: 1");
  expect_line(text, "  method 'decode'");
  expect_line(text, "    arena bytes: 64");
  expect_line(text, "      [0] tokens: i64 [1, 1]");
  expect_line(text, "      [0] logits: f32 [1, 1, 8]");
  expect_line(text, "    instructions: 2 (1 kernel call, 1 delegate call)");

  // w (64 bytes, shared by both methods), b (32), q (68), table (32): the shared one counts once.
  expect_line(text, "constants: 4 tensors, 196 bytes");
  expect_line(text, "segments: 3, 301 bytes");
  expect_line(text, "  checksums: xxh3-64, verified at load");
  auto loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok());
  // Each segment with what it holds and its checksum.
  expect_line(text, fmt::format("  [0] constants: 256 bytes, checksum {:016x}", (*loaded)->segment_checksum(0)));
  expect_line(text, fmt::format("  [1] payload of delegate 0 ('qnn'): 13 bytes, checksum {:016x}",
                                (*loaded)->segment_checksum(1)));
  expect_line(text, fmt::format("  [2] constants: 32 bytes, checksum {:016x}", (*loaded)->segment_checksum(2)));
  expect_line(text, "delegates (1):");
  expect_line(text, "  [0] backend 'qnn': payload segment 1, 13 bytes");
  expect_line(text, "    compile specs (3):");
  expect_line(text, "      blob = hex 00 01 02 ff (4 bytes)");
  expect_line(text, "      empty = \"\"");
  expect_line(text, "      soc_model = \"SM8650\"");
}

TEST(DescribeProgram, ShortensLongValues) {
  ProgramSpec spec = testing::small_program();
  spec.metadata["long_text"] = std::string(100, 'a');
  spec.metadata["quoted"] = std::string("say \"hi\"\n");
  std::vector<std::string> names;
  for (int i = 0; i < 10; ++i) names.push_back(fmt::format("n{}", i));
  spec.metadata["many_names"] = names;
  spec.delegates.push_back(DelegateSpec{"cpu", 0, {{"big", std::vector<uint8_t>(40, 0xab)},
                                                   {"long", std::vector<uint8_t>(70, 'x')}}});
  const std::string text = describe(spec);
  expect_line(text, "  long_text = \"" + std::string(64, 'a') + "\"... (100 chars)");
  expect_line(text, "  quoted = \"say \\\"hi\\\"\\x0a\"");
  expect_line(text, "  many_names = [\"n0\", \"n1\", \"n2\", \"n3\", \"n4\", \"n5\", \"n6\", \"n7\", ... (10 items)]");
  std::string hex = "hex";
  for (int i = 0; i < 32; ++i) hex += " ab";
  expect_line(text, "      big = " + hex + " ... (40 bytes)");
  expect_line(text, "      long = \"" + std::string(64, 'x') + "\"... (70 chars)");
  expect_line(text, "  [0] backend 'cpu': payload segment 0, 96 bytes");
  expect_line(text, "constants: 1 tensor, 96 bytes");
}

TEST(DescribeProgram, SaysWhenChecksumsWereNotVerified) {
  ProgramSpec spec = testing::small_program();
  spec.segments.push_back(testing::text_bytes("tokenizer bytes"));
  spec.metadata["tokenizer_segment"] = int64_t{1};
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok());
  LoadOptions options;
  options.verify_checksums = false;
  auto loaded = LoadedProgram::load_bytes(*bytes, options);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  const std::string text = describe_program(**loaded);
  expect_line(text, "  checksums: xxh3-64, not verified");
  expect_line(text, fmt::format("  [1] tokenizer: 15 bytes, checksum {:016x}", (*loaded)->segment_checksum(1)));
}

TEST(DescribeProgram, EmptyProgram) {
  const std::string text = describe(ProgramSpec{});
  expect_line(text, "metadata (0):");
  expect_line(text, "methods (0):");
  expect_line(text, "constants: 0 tensors, 0 bytes");
  expect_line(text, "segments: 0, 0 bytes");
  EXPECT_NE(text.find("\ndelegates (0):\n"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::program
