// The loader never trusts the file: every damaged or inconsistent program is a clear error
// naming the problem (and never a crash); the writer refuses the same inconsistencies.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <random>

#include "kestrel/program/loaded_program.h"
#include "kestrel/program/validate.h"
#include "kestrel/program/writer.h"
#include "program/format.h"
#include "program/program_builders.h"

namespace kestrel::program {
namespace {

using testing::rich_program;
using testing::small_program;
using testing::TempDir;

std::vector<uint8_t> serialize_unchecked(const ProgramSpec& spec, format::SerializeOptions options = {}) {
  options.validate = false;
  auto bytes = format::serialize(spec, options);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

std::string load_error(const std::vector<uint8_t>& bytes, ErrorCode* code = nullptr) {
  auto loaded = LoadedProgram::load_bytes(bytes);
  if (loaded.ok()) return "";
  if (code != nullptr) *code = loaded.error().code();
  return loaded.error().message();
}

// Loads without comparing checksums: what the structural checks alone make of damaged bytes
// (with checksums, any damage to the description is caught before them).
LoadOptions structure_only() {
  LoadOptions options;
  options.verify_checksums = false;
  return options;
}

std::string structural_error(const std::vector<uint8_t>& bytes) {
  auto loaded = LoadedProgram::load_bytes(bytes, structure_only());
  return loaded.ok() ? "" : loaded.error().message();
}

void put_u64(std::vector<uint8_t>& bytes, size_t at, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
}

// ---- Damaged files ----------------------------------------------------------------------------

TEST(ProgramBadInput, EmptyFileAndEmptyBytes) {
  TempDir dir("bad_empty");
  const std::string path = dir.file("empty.kst");
  testing::write_bytes(path, {});
  auto loaded = LoadedProgram::load_file(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(loaded.error().message().find("empty"), std::string::npos) << loaded.error().message();
  EXPECT_NE(loaded.error().message().find(path), std::string::npos) << loaded.error().message();

  auto from_bytes = LoadedProgram::load_bytes({});
  ASSERT_FALSE(from_bytes.ok());
  EXPECT_NE(from_bytes.error().message().find("empty"), std::string::npos);
}

TEST(ProgramBadInput, NonexistentPathAndDirectory) {
  TempDir dir("bad_path");
  const std::string path = dir.file("does_not_exist.kst");
  auto loaded = LoadedProgram::load_file(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().code(), ErrorCode::kIo);
  EXPECT_NE(loaded.error().message().find(path), std::string::npos);
  EXPECT_NE(loaded.error().message().find("No such file"), std::string::npos) << loaded.error().message();

  auto directory = LoadedProgram::load_file(dir.path().string());
  ASSERT_FALSE(directory.ok());
  EXPECT_EQ(directory.error().code(), ErrorCode::kIo);
  EXPECT_NE(directory.error().message().find("not a regular file"), std::string::npos);
}

TEST(ProgramBadInput, WrongMagic) {
  auto bytes = serialize_unchecked(small_program());
  bytes[0] = 'X';
  ErrorCode code{};
  const std::string message = load_error(bytes, &code);
  EXPECT_EQ(code, ErrorCode::kCorrupt);
  EXPECT_NE(message.find("header: bad magic 58 45 53 54"), std::string::npos) << message;
  EXPECT_NE(message.find("not a Kestrel program file"), std::string::npos) << message;

  // Something that is not a program at all.
  const std::string text = "this is a text file, not a program, but it is long enough for a header";
  EXPECT_NE(load_error(testing::text_bytes(text)).find("bad magic"), std::string::npos);
}

TEST(ProgramBadInput, HeaderFields) {
  const auto good = serialize_unchecked(small_program());
  auto header = format::decode_header(good);
  ASSERT_TRUE(header.ok());
  struct Case {
    size_t field;
    uint64_t value;
    bool u32;
    ErrorCode code;
    const char* message;
  };
  const Case cases[] = {
      {format::kVersionField, 3, true, ErrorCode::kUnsupported, "format version 3 is not supported"},
      {format::kVersionField, 1, true, ErrorCode::kUnsupported,
       "format version 1 (written before programs carried checksums) is no longer supported: export the checkpoint "
       "again"},
      {format::kFlagsField, 4, true, ErrorCode::kUnsupported, "unknown flags 0x4"},
      {format::kFlatbufferOffsetField, 44, false, ErrorCode::kCorrupt, "flatbuffer offset 44"},
      {format::kFlatbufferOffsetField, 52, false, ErrorCode::kCorrupt, "flatbuffer offset 52"},
      {format::kFlatbufferOffsetField, 60, false, ErrorCode::kCorrupt, "flatbuffer offset 60"},
      {format::kFlatbufferChecksumField, header->flatbuffer_checksum ^ 1, false, ErrorCode::kCorrupt,
       "description (flatbuffer [56, 56+"},
      {format::kFlatbufferOffsetField, 1ull << 62, false, ErrorCode::kOutOfRange, "past the end of the file"},
      {format::kFlatbufferSizeField, ~0ull, false, ErrorCode::kOutOfRange, "past the end of the file"},
      {format::kFlatbufferSizeField, 4, false, ErrorCode::kCorrupt, "flatbuffer: size 4"},
      {format::kDataOffsetField, header->data_offset + 8, false, ErrorCode::kCorrupt, "not a multiple of 64"},
      {format::kDataOffsetField, 0, false, ErrorCode::kCorrupt, "data offset 0"},
      {format::kDataOffsetField, ~0ull - 63, false, ErrorCode::kOutOfRange, "data area"},
      {format::kDataSizeField, header->data_size + 1, false, ErrorCode::kOutOfRange, "truncated"},
      {format::kDataSizeField, ~0ull, false, ErrorCode::kOutOfRange, "truncated"},
      {format::kDataSizeField, header->data_size - 1, false, ErrorCode::kCorrupt, "1 bytes after the data area"},
  };
  for (const Case& c : cases) {
    auto bytes = good;
    if (c.u32) {
      for (int i = 0; i < 4; ++i) bytes[c.field + i] = static_cast<uint8_t>(c.value >> (8 * i));
    } else {
      put_u64(bytes, c.field, c.value);
    }
    ErrorCode code{};
    const std::string message = load_error(bytes, &code);
    EXPECT_EQ(code, c.code) << "field " << c.field << ": " << message;
    EXPECT_NE(message.find(c.message), std::string::npos) << "field " << c.field << ": " << message;
  }
}

TEST(ProgramBadInput, TrailingBytes) {
  auto bytes = serialize_unchecked(small_program());
  bytes.push_back(0);
  EXPECT_NE(load_error(bytes).find("1 bytes after the data area"), std::string::npos);
}

TEST(ProgramBadInput, TruncatedAtEveryPoint) {
  TempDir dir("bad_truncated");
  const auto good = serialize_unchecked(rich_program());
  ASSERT_TRUE(LoadedProgram::load_bytes(good).ok());
  for (size_t size = 0; size < good.size(); ++size) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + size);
    auto loaded = LoadedProgram::load_bytes(cut);
    ASSERT_FALSE(loaded.ok()) << "truncated to " << size;
    const std::string& message = loaded.error().message();
    if (size == 0) {
      EXPECT_NE(message.find("empty"), std::string::npos) << message;
    } else {
      EXPECT_NE(message.find("truncated"), std::string::npos) << "size " << size << ": " << message;
    }
  }
  // The same through files, at a few points.
  for (size_t size : {size_t{1}, size_t{47}, size_t{48}, size_t{55}, size_t{56}, size_t{100}, good.size() / 2,
                      good.size() - 1}) {
    const std::string path = dir.file("cut.kst");
    testing::write_bytes(path, std::vector<uint8_t>(good.begin(), good.begin() + size));
    auto loaded = LoadedProgram::load_file(path);
    ASSERT_FALSE(loaded.ok()) << size;
    EXPECT_NE(loaded.error().message().find("truncated"), std::string::npos) << loaded.error().message();
  }
}

// Flipping any byte of the flatbuffer fails the description's checksum. Without checksums, the
// structural checks either fail with an error or load a program that still passes every check; it
// never crashes (run under the sanitizers too).
TEST(ProgramBadInput, FlippedByteAnywhereInTheFlatbuffer) {
  const auto good = serialize_unchecked(rich_program());
  auto header = format::decode_header(good);
  ASSERT_TRUE(header.ok());
  size_t errors = 0, loads = 0;
  for (uint64_t at = header->flatbuffer_offset; at < header->flatbuffer_offset + header->flatbuffer_size; ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x10}, uint8_t{0x80}, uint8_t{0xff}}) {
      auto bytes = good;
      bytes[at] ^= mask;
      const std::string checked = load_error(bytes);
      EXPECT_NE(checked.find("description (flatbuffer"), std::string::npos) << "byte " << at << ": " << checked;
      EXPECT_NE(checked.find("checksum mismatch"), std::string::npos) << "byte " << at << ": " << checked;

      auto loaded = LoadedProgram::load_bytes(bytes, structure_only());
      if (!loaded.ok()) {
        ++errors;
        EXPECT_FALSE(loaded.error().message().empty());
        continue;
      }
      ++loads;
      // A successful load is a verified program: it passes validation again and describes.
      const LoadedProgram& program = **loaded;
      std::vector<uint64_t> sizes;
      for (uint32_t i = 0; i < program.num_segments(); ++i) sizes.push_back(program.segment(i).size());
      auto status = validate_program(program.spec(), sizes, ErrorCode::kCorrupt);
      EXPECT_TRUE(status.ok()) << "byte " << at << ": " << status.error().to_string();
      for (const auto& method : program.spec().methods)
        for (const auto& value : method.values)
          if (value.kind == ValueKind::kConstant) {
            EXPECT_EQ(program.constant_bytes(value).size(), value.constant.nbytes);
          }
    }
  }
  EXPECT_GT(errors, 0u);
  EXPECT_GT(loads, 0u);  // e.g. a flipped character in a name
}

// Random multi-byte damage (bytes and small integers, where offsets and indices live) anywhere in
// the file. Without checksums: an error or a program that passes every check again. With them:
// an error, or (damage confined to padding) exactly the program that was written.
TEST(ProgramBadInput, RandomDamageNeverCrashes) {
  const ProgramSpec spec = rich_program();
  const auto good = serialize_unchecked(spec);
  const int iterations = std::getenv("KESTREL_FUZZ_ITERATIONS") ? std::atoi(std::getenv("KESTREL_FUZZ_ITERATIONS")) : 3000;
  std::mt19937 rng(1234);
  size_t loads = 0, checked_loads = 0;
  for (int iteration = 0; iteration < iterations; ++iteration) {
    auto bytes = good;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int e = 0; e < edits; ++e) {
      const size_t at = rng() % (bytes.size() - 4);
      switch (rng() % 3) {
        case 0: bytes[at] = static_cast<uint8_t>(rng()); break;
        case 1: {  // a small little-endian integer
          const uint32_t value = rng() % 512;
          for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<uint8_t>(value >> (8 * i));
          break;
        }
        default: bytes[at] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      }
    }
    if (auto checked = LoadedProgram::load_bytes(bytes); checked.ok()) {
      ++checked_loads;
      EXPECT_TRUE((*checked)->spec() == testing::without_segments(spec)) << "iteration " << iteration;
      for (uint32_t i = 0; i < (*checked)->num_segments(); ++i) {
        const auto segment = (*checked)->segment(i);
        EXPECT_EQ(std::vector<uint8_t>(segment.begin(), segment.end()), *spec.segments[i].held())
            << "iteration " << iteration << ", segment " << i;
      }
    }
    auto loaded = LoadedProgram::load_bytes(bytes, structure_only());
    if (!loaded.ok()) {
      EXPECT_FALSE(loaded.error().message().empty());
      continue;
    }
    ++loads;
    const LoadedProgram& program = **loaded;
    std::vector<uint64_t> sizes;
    for (uint32_t i = 0; i < program.num_segments(); ++i) sizes.push_back(program.segment(i).size());
    auto status = validate_program(program.spec(), sizes, ErrorCode::kCorrupt);
    EXPECT_TRUE(status.ok()) << "iteration " << iteration << ": " << status.error().to_string();
  }
  EXPECT_GT(loads, checked_loads);
}

TEST(ProgramBadInput, FlippedByteInTheHeaderNeverCrashes) {
  const auto good = serialize_unchecked(rich_program());
  for (size_t at = 0; at < format::kHeaderBytes; ++at) {
    for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}}) {
      auto bytes = good;
      bytes[at] ^= mask;
      auto loaded = LoadedProgram::load_bytes(bytes);
      if (!loaded.ok()) {
        EXPECT_FALSE(loaded.error().message().empty());
      }
    }
  }
}

TEST(ProgramBadInput, FlatbufferGarbage) {
  auto bytes = serialize_unchecked(small_program());
  auto header = format::decode_header(bytes);
  ASSERT_TRUE(header.ok());
  // The structural verifier's view of each (with checksums each is a description checksum error).
  // Wrong identifier.
  auto wrong_id = bytes;
  wrong_id[header->flatbuffer_offset + 4] = 'X';
  EXPECT_NE(load_error(wrong_id).find("checksum mismatch"), std::string::npos);
  EXPECT_NE(structural_error(wrong_id).find("identifier is not \"KSTL\""), std::string::npos);
  // Filled with 0xff after the identifier: offsets point outside the buffer.
  auto filled = bytes;
  std::fill(filled.begin() + header->flatbuffer_offset + 8,
            filled.begin() + header->flatbuffer_offset + header->flatbuffer_size, 0xff);
  std::string message = structural_error(filled);
  EXPECT_NE(message.find("failed verification"), std::string::npos) << message;
  // A root offset pointing past the end.
  auto root = bytes;
  root[header->flatbuffer_offset + 3] = 0x7f;
  message = structural_error(root);
  EXPECT_NE(message.find("failed verification"), std::string::npos) << message;
  // Zeroed: whatever it decodes to is refused.
  auto zeroed = bytes;
  std::fill(zeroed.begin() + header->flatbuffer_offset + 8,
            zeroed.begin() + header->flatbuffer_offset + header->flatbuffer_size, 0);
  EXPECT_FALSE(structural_error(zeroed).empty());
}

TEST(ProgramBadInput, SegmentTableOutOfRange) {
  const ProgramSpec spec = small_program();
  format::SerializeOptions options;
  options.segment_table = std::vector<format::SegmentRange>{{1 << 20, 96}};
  ErrorCode code{};
  std::string message = load_error(serialize_unchecked(spec, options), &code);
  EXPECT_EQ(code, ErrorCode::kOutOfRange);
  EXPECT_NE(message.find("segment table: segment 0 [1048576, 1048576+96) is outside the data area (96 bytes)"),
            std::string::npos)
      << message;

  options.segment_table = std::vector<format::SegmentRange>{{0, 97}};
  message = load_error(serialize_unchecked(spec, options), &code);
  EXPECT_EQ(code, ErrorCode::kOutOfRange);
  EXPECT_NE(message.find("outside the data area"), std::string::npos) << message;

  options.segment_table = std::vector<format::SegmentRange>{{~0ull - 63, 128}};
  message = load_error(serialize_unchecked(spec, options), &code);
  EXPECT_EQ(code, ErrorCode::kOutOfRange);

  options.segment_table = std::vector<format::SegmentRange>{{8, 16}};
  message = load_error(serialize_unchecked(spec, options), &code);
  EXPECT_EQ(code, ErrorCode::kCorrupt);
  EXPECT_NE(message.find("segment 0 offset 8 is not a multiple of 64"), std::string::npos) << message;

  // A smaller segment than the constant needs.
  options.segment_table = std::vector<format::SegmentRange>{{0, 64}};
  message = load_error(serialize_unchecked(spec, options), &code);
  EXPECT_EQ(code, ErrorCode::kOutOfRange);
  EXPECT_NE(message.find("method 'forward', value 1 'c': constant bytes [0, 0+96) are outside segment 0 (64 bytes)"),
            std::string::npos)
      << message;
}

// ---- Inconsistent specs: the loader rejects the file, the writer rejects the spec ------------

struct SpecCase {
  const char* name;
  std::function<void(ProgramSpec&)> mutate;
  ErrorCode load_code;   // the loader's code; the writer uses kInvalidArgument for kCorrupt
  const char* message;   // expected in both errors
};

MethodSpec& forward(ProgramSpec& spec) { return spec.methods[0]; }

const SpecCase kSpecCases[] = {
    {"tensor bytes do not match the shape",
     [](ProgramSpec& s) { forward(s).values[1].constant.nbytes = 90; }, ErrorCode::kCorrupt,
     "method 'forward', value 1 'c': tensor 'c' has 90 bytes but shape [2, 3, 4] f32 needs 96"},
    {"constant segment out of range", [](ProgramSpec& s) { forward(s).values[1].constant.segment = 3; },
     ErrorCode::kOutOfRange, "value 1 'c': constant segment 3 is out of range (the program has 1 segments)"},
    {"constant past the segment end", [](ProgramSpec& s) { forward(s).values[1].constant.offset = 4; },
     ErrorCode::kOutOfRange, "value 1 'c': constant bytes [4, 4+96) are outside segment 0 (96 bytes)"},
    {"constant offset overflow", [](ProgramSpec& s) { forward(s).values[1].constant.offset = ~0ull - 7; },
     ErrorCode::kOutOfRange, "are outside segment 0"},
    {"misaligned constant",
     [](ProgramSpec& s) {
       s.segments[0] = testing::pattern(128, 3);
       forward(s).values[1].constant.offset = 2;
     },
     ErrorCode::kCorrupt, "constant offset 2 in segment 0 is not a multiple of 4 (f32)"},
    {"invalid dtype", [](ProgramSpec& s) { forward(s).values[2].dtype = static_cast<DType>(42); },
     ErrorCode::kCorrupt, "method 'forward', value 2 't': invalid dtype 42"},
    {"unknown kind", [](ProgramSpec& s) { forward(s).values[2].kind = static_cast<ValueKind>(9); },
     ErrorCode::kCorrupt, "value 2 't': unknown value kind 9"},
    {"negative dimension", [](ProgramSpec& s) { forward(s).values[2].shape = {2, -3, 4}; }, ErrorCode::kCorrupt,
     "value 2 't': shape [2, -3, 4] has a negative dimension"},
    {"rank above the maximum", [](ProgramSpec& s) { forward(s).values[2].shape = {1, 1, 1, 1, 1, 1, 1, 1, 1}; },
     ErrorCode::kCorrupt, "value 2 't': shape [1, 1, 1, 1, 1, 1, 1, 1, 1] has rank 9, more than the maximum 8"},
    {"element count overflow", [](ProgramSpec& s) { forward(s).values[0].shape = {1ll << 40, 1ll << 40}; },
     ErrorCode::kCorrupt, "value 0 'x': shape [1099511627776, 1099511627776] has too many elements"},
    {"q8 last axis", [](ProgramSpec& s) { forward(s).values[2].dtype = DType::kQ8; }, ErrorCode::kCorrupt,
     "value 2 't': shape [2, 3, 4] q8: q8 needs the last axis (4) to be a positive multiple of 32"},
    {"intermediate outside the arena", [](ProgramSpec& s) { forward(s).values[2].arena_offset = 64; },
     ErrorCode::kOutOfRange, "value 2 't': intermediate bytes [64, 64+96) are outside the method's arena (128 bytes)"},
    {"arena offset overflow", [](ProgramSpec& s) { forward(s).values[2].arena_offset = ~0ull; },
     ErrorCode::kOutOfRange, "outside the method's arena"},
    {"misaligned intermediate", [](ProgramSpec& s) { forward(s).values[2].arena_offset = 6; },
     ErrorCode::kCorrupt, "value 2 't': arena offset 6 is not a multiple of 4 (f32)"},
    {"alias of itself",
     [](ProgramSpec& s) {
       forward(s).values[2].kind = ValueKind::kAlias;
       forward(s).values[2].alias_of = 2;
     },
     ErrorCode::kCorrupt, "method 'forward', value 2 't': value aliases itself"},
    {"alias out of range",
     [](ProgramSpec& s) {
       forward(s).values[2].kind = ValueKind::kAlias;
       forward(s).values[2].alias_of = 50;
     },
     ErrorCode::kOutOfRange, "value 2 't': alias_of 50 is out of range (the method has 4 values)"},
    {"negative alias",
     [](ProgramSpec& s) {
       forward(s).values[2].kind = ValueKind::kAlias;
       forward(s).values[2].alias_of = -1;
     },
     ErrorCode::kOutOfRange, "alias_of -1 is out of range"},
    {"alias cycle",
     [](ProgramSpec& s) {
       auto& values = forward(s).values;
       values.push_back(testing::alias("a", DType::kF32, {24}, 5));
       values.push_back(testing::alias("b", DType::kF32, {24}, 4));
     },
     ErrorCode::kCorrupt, "value 4 'a': alias chain is a cycle"},
    {"alias larger than its storage",
     [](ProgramSpec& s) { forward(s).values.push_back(testing::alias("big", DType::kF32, {2, 3, 5}, 2)); },
     ErrorCode::kCorrupt, "value 4 'big': alias needs 120 bytes but its storage 't' (value 2) has 96"},
    {"instruction output out of range",
     [](ProgramSpec& s) { std::get<KernelCall>(forward(s).instructions[0]).outputs = {99}; },
     ErrorCode::kOutOfRange,
     "method 'forward', instruction 0 (kernel 'add'): output 0 is value 99, out of range (the method has 4 values)"},
    {"instruction input negative",
     [](ProgramSpec& s) { std::get<KernelCall>(forward(s).instructions[1]).inputs = {2, -1}; },
     ErrorCode::kOutOfRange, "instruction 1 (kernel 'add'): input 1 is value -1, out of range"},
    {"instruction writes a constant",
     [](ProgramSpec& s) { std::get<KernelCall>(forward(s).instructions[0]).outputs = {1}; }, ErrorCode::kCorrupt,
     "instruction 0 (kernel 'add'): output 0 writes constant 'c'"},
    {"instruction writes a constant through an alias",
     [](ProgramSpec& s) {
       forward(s).values.push_back(testing::alias("c_view", DType::kF32, {24}, 1));
       std::get<KernelCall>(forward(s).instructions[0]).outputs = {4};
     },
     ErrorCode::kCorrupt, "output 0 writes constant 'c'"},
    {"kernel without an op", [](ProgramSpec& s) { std::get<KernelCall>(forward(s).instructions[0]).op.clear(); },
     ErrorCode::kCorrupt, "instruction 0: kernel call without an op name"},
    {"delegate index out of range",
     [](ProgramSpec& s) { forward(s).instructions.push_back(DelegateCall{2, {0}, {3}}); }, ErrorCode::kOutOfRange,
     "method 'forward', instruction 2: delegate 2 is out of range (the program has 0 delegates)"},
    {"delegate call value out of range",
     [](ProgramSpec& s) {
       s.delegates.push_back(DelegateSpec{"qnn", 0, {}});
       forward(s).instructions.push_back(DelegateCall{0, {0, 7}, {3}});
     },
     ErrorCode::kOutOfRange, "instruction 2 (delegate 0 'qnn'): input 1 is value 7, out of range"},
    {"payload segment out of range", [](ProgramSpec& s) { s.delegates.push_back(DelegateSpec{"qnn", 5, {}}); },
     ErrorCode::kOutOfRange, "delegate 0 ('qnn'): payload segment 5 is out of range (the program has 1 segments)"},
    {"empty backend id", [](ProgramSpec& s) { s.delegates.push_back(DelegateSpec{"", 0, {}}); },
     ErrorCode::kCorrupt, "delegate 0 has an empty backend id"},
    {"input index out of range", [](ProgramSpec& s) { forward(s).inputs = {0, 8}; }, ErrorCode::kOutOfRange,
     "method 'forward', input 1: value index 8 is out of range (the method has 4 values)"},
    {"input of the wrong kind", [](ProgramSpec& s) { forward(s).inputs = {0, 1}; }, ErrorCode::kCorrupt,
     "method 'forward', input 1: value 1 'c' is a constant, not an input"},
    {"output of the wrong kind", [](ProgramSpec& s) { forward(s).outputs = {2}; }, ErrorCode::kCorrupt,
     "method 'forward', output 0: value 2 't' is an intermediate, not an output"},
    {"input listed twice", [](ProgramSpec& s) { forward(s).inputs = {0, 0}; }, ErrorCode::kCorrupt,
     "input 1: value 0 'x' is listed twice"},
    {"input not listed", [](ProgramSpec& s) { forward(s).inputs.clear(); }, ErrorCode::kCorrupt,
     "value 0 'x': an input value not listed in the method's inputs"},
    {"duplicate method names", [](ProgramSpec& s) { s.methods.push_back(s.methods[0]); }, ErrorCode::kCorrupt,
     "method 1: two methods are named 'forward'"},
    {"empty method name", [](ProgramSpec& s) { forward(s).name.clear(); }, ErrorCode::kCorrupt,
     "method 0 has an empty name"},
    // Arenas larger than the method's intermediates laid end to end are refused before any
    // allocation (each of these once made `run` abort, wrap to a tiny buffer, or take 2 GiB).
    {"arena of 2^31 bytes", [](ProgramSpec& s) { forward(s).arena_bytes = uint64_t{1} << 31; }, ErrorCode::kCorrupt,
     "method 'forward': arena_bytes 2147483648 is more than its 1 intermediates can use (128 bytes, each rounded up "
     "to 64)"},
    {"arena of 2^40 bytes", [](ProgramSpec& s) { forward(s).arena_bytes = uint64_t{1} << 40; }, ErrorCode::kCorrupt,
     "arena_bytes 1099511627776 is more than its 1 intermediates can use"},
    {"arena of 2^63 bytes", [](ProgramSpec& s) { forward(s).arena_bytes = uint64_t{1} << 63; }, ErrorCode::kCorrupt,
     "arena_bytes 9223372036854775808 is more than its 1 intermediates can use"},
    {"arena of 2^64-1 bytes", [](ProgramSpec& s) { forward(s).arena_bytes = ~uint64_t{0}; }, ErrorCode::kCorrupt,
     "arena_bytes 18446744073709551615 is more than its 1 intermediates can use"},
    {"arena without intermediates", [](ProgramSpec& s) {
       forward(s).values[2] = testing::alias("t", DType::kF32, {2, 3, 4}, 0);
     }, ErrorCode::kCorrupt, "arena_bytes 128 is more than its 0 intermediates can use (0 bytes"},
    {"unsupported program version", [](ProgramSpec& s) { s.version = 7; }, ErrorCode::kUnsupported,
     "program version 7 is not supported (this build reads version 1)"},
};

TEST(ProgramBadInput, InconsistentSpecs) {
  for (const SpecCase& c : kSpecCases) {
    SCOPED_TRACE(c.name);
    ProgramSpec spec = small_program();
    ASSERT_TRUE(validate_program(spec).ok());
    c.mutate(spec);

    // The writer refuses it...
    auto written = serialize_program(spec);
    ASSERT_FALSE(written.ok());
    const ErrorCode write_code = c.load_code == ErrorCode::kCorrupt ? ErrorCode::kInvalidArgument : c.load_code;
    EXPECT_EQ(written.error().code(), write_code) << written.error().to_string();
    EXPECT_NE(written.error().message().find(c.message), std::string::npos) << written.error().message();

    // ...and a file holding it anyway is rejected by the loader.
    auto loaded = LoadedProgram::load_bytes(serialize_unchecked(spec));
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.error().code(), c.load_code) << loaded.error().to_string();
    EXPECT_NE(loaded.error().message().find(c.message), std::string::npos) << loaded.error().message();
    EXPECT_EQ(loaded.error().message().rfind("program bytes (", 0), 0u) << loaded.error().message();
  }
}

TEST(ProgramBadInput, LoadFileErrorsNameTheFile) {
  TempDir dir("bad_named");
  ProgramSpec spec = small_program();
  forward(spec).values[1].constant.nbytes = 90;
  const std::string path = dir.file("bad.kst");
  testing::write_bytes(path, serialize_unchecked(spec));
  auto loaded = LoadedProgram::load_file(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().to_string(),
            "corrupt: program file '" + path +
                "': method 'forward', value 1 'c': tensor 'c' has 90 bytes but shape [2, 3, 4] f32 needs 96");
}

TEST(ProgramBadInput, RichProgramIsValid) {
  // The builders themselves produce valid programs (the cases above start from a valid one).
  EXPECT_TRUE(validate_program(rich_program()).ok()) << validate_program(rich_program()).error().to_string();
  EXPECT_TRUE(validate_program(small_program()).ok());
}

}  // namespace
}  // namespace kestrel::program

namespace kestrel::program {
namespace {

// Alias chains are resolved in one pass: a long chain (or a long cycle) is checked quickly, and
// through the file as well.
TEST(ProgramBadInput, LongAliasChains) {
  ProgramSpec spec = small_program();
  auto& values = forward(spec).values;
  constexpr int kChain = 50000;
  for (int i = 0; i < kChain; ++i)
    values.push_back(testing::alias(fmt::format("a{}", i), DType::kF32, {24}, i == 0 ? 2 : static_cast<int32_t>(values.size() - 1)));
  auto status = validate_program(spec);
  EXPECT_TRUE(status.ok()) << status.error().to_string();
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  EXPECT_TRUE(LoadedProgram::load_bytes(*bytes).ok());

  values[4].alias_of = static_cast<int32_t>(values.size() - 1);  // close the chain into a cycle
  status = validate_program(spec);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("value 4 'a0': alias chain is a cycle"), std::string::npos)
      << status.error().message();
}

}  // namespace
}  // namespace kestrel::program
