// Writing a program and loading it back (from a file and from memory) gives the same spec, and
// constants are 64-byte aligned spans into the mapping rather than copies.
#include <gtest/gtest.h>

#include <filesystem>

#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"
#include "program/format.h"
#include "program/program_builders.h"

namespace kestrel::program {
namespace {

using testing::read_bytes;
using testing::rich_program;
using testing::TempDir;
using testing::without_segments;

void expect_same_program(const LoadedProgram& loaded, const ProgramSpec& expected) {
  EXPECT_TRUE(loaded.spec() == without_segments(expected));
  EXPECT_TRUE(loaded.spec().segments.empty());
  ASSERT_EQ(loaded.num_segments(), expected.segments.size());
  for (uint32_t i = 0; i < expected.segments.size(); ++i) {
    const auto segment = loaded.segment(i);
    ASSERT_NE(expected.segments[i].held(), nullptr);
    EXPECT_EQ(std::vector<uint8_t>(segment.begin(), segment.end()), *expected.segments[i].held()) << "segment " << i;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(segment.data()) % kSegmentAlignment, 0u) << "segment " << i;
  }
}

// Every constant is a span inside the program's bytes, at the segment's place, with its bytes.
void expect_constants_in_place(const LoadedProgram& loaded, const ProgramSpec& expected) {
  const auto file = loaded.file_span();
  for (const auto& method : loaded.spec().methods) {
    for (const auto& value : method.values) {
      if (value.kind != ValueKind::kConstant) continue;
      const auto bytes = loaded.constant_bytes(value);
      ASSERT_EQ(bytes.size(), value.constant.nbytes) << value.name;
      EXPECT_GE(bytes.data(), file.data()) << value.name;
      EXPECT_LE(bytes.data() + bytes.size(), file.data() + file.size()) << value.name;
      EXPECT_EQ(bytes.data(), loaded.segment(value.constant.segment).data() + value.constant.offset);
      if (value.constant.offset % kSegmentAlignment == 0) {
        EXPECT_EQ(reinterpret_cast<uintptr_t>(bytes.data()) % kSegmentAlignment, 0u) << value.name;
      }
      const auto& source = *expected.segments[value.constant.segment].held();
      EXPECT_TRUE(std::equal(bytes.begin(), bytes.end(), source.begin() + value.constant.offset)) << value.name;
    }
  }
}

TEST(ProgramRoundTrip, LoadFileGivesBackTheSpec) {
  TempDir dir("round_trip_file");
  const ProgramSpec spec = rich_program();
  const std::string path = dir.file("rich.kst");
  auto written = write_program(spec, path);
  ASSERT_TRUE(written.ok()) << written.error().to_string();

  auto loaded = LoadedProgram::load_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  const LoadedProgram& program = **loaded;
  expect_same_program(program, spec);
  expect_constants_in_place(program, spec);
  EXPECT_TRUE(program.is_mapped());
  EXPECT_EQ(program.format_version(), format::kFormatVersion);
  EXPECT_EQ(program.file_bytes(), std::filesystem::file_size(path));

  // The mapping holds exactly the file's bytes.
  const auto file = read_bytes(path);
  ASSERT_EQ(file.size(), program.file_span().size());
  EXPECT_TRUE(std::equal(file.begin(), file.end(), program.file_span().begin()));

  // Both methods read the shared weight from the same bytes.
  const MethodSpec* prefill = program.find_method("prefill");
  const MethodSpec* decode = program.find_method("decode");
  ASSERT_NE(prefill, nullptr);
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(program.find_method("missing"), nullptr);
  EXPECT_EQ(program.constant_bytes(prefill->values[2]).data(), program.constant_bytes(decode->values[1]).data());
  // Non-constants have no constant bytes.
  EXPECT_TRUE(program.constant_bytes(prefill->values[0]).empty());
}

TEST(ProgramRoundTrip, LoadBytesGivesBackTheSpec) {
  const ProgramSpec spec = rich_program();
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  expect_same_program(**loaded, spec);
  expect_constants_in_place(**loaded, spec);
  EXPECT_FALSE((*loaded)->is_mapped());
  EXPECT_EQ((*loaded)->file_bytes(), bytes->size());
  // The copy is the program's own: it is not the caller's buffer.
  EXPECT_NE((*loaded)->file_span().data(), bytes->data());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*loaded)->file_span().data()) % kSegmentAlignment, 0u);
}

TEST(ProgramRoundTrip, FileAndBytesAgreeAndWriterIsDeterministic) {
  TempDir dir("round_trip_agree");
  const ProgramSpec spec = rich_program();
  auto first = serialize_program(spec);
  auto second = serialize_program(spec);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
  ASSERT_TRUE(write_program(spec, dir.file("p.kst")).ok());
  EXPECT_EQ(read_bytes(dir.file("p.kst")), *first);
}

TEST(ProgramRoundTrip, FileLayout) {
  const ProgramSpec spec = rich_program();
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok());
  ASSERT_GE(bytes->size(), format::kHeaderBytes);
  EXPECT_EQ(std::memcmp(bytes->data(), "KESTREL\0", 8), 0);
  auto header = format::decode_header(*bytes);
  ASSERT_TRUE(header.ok()) << header.error().to_string();
  EXPECT_EQ(header->format_version, format::kFormatVersion);
  EXPECT_EQ(header->flags, 0u);
  EXPECT_EQ(header->flatbuffer_offset, format::kHeaderBytes);
  EXPECT_EQ(header->data_offset % kSegmentAlignment, 0u);
  EXPECT_GE(header->data_offset, header->flatbuffer_offset + header->flatbuffer_size);
  EXPECT_EQ(header->data_offset + header->data_size, bytes->size());
  // The flatbuffer carries the "KSTL" identifier at its 4th byte.
  EXPECT_EQ(std::memcmp(bytes->data() + header->flatbuffer_offset + 4, "KSTL", 4), 0);
  // Segments sit at 64-byte aligned file offsets in order.
  auto loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok());
  for (uint32_t i = 0; i < (*loaded)->num_segments(); ++i) {
    const uint64_t offset = (*loaded)->segment(i).data() - (*loaded)->file_span().data();
    EXPECT_EQ(offset % kSegmentAlignment, 0u);
    EXPECT_GE(offset, header->data_offset);
  }
}

TEST(ProgramRoundTrip, EmptyProgramAndEmptySegments) {
  ProgramSpec spec;  // no methods, no segments, no metadata
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_TRUE((*loaded)->spec() == spec);
  EXPECT_EQ((*loaded)->num_segments(), 0u);

  spec.segments = {{}, {1, 2, 3}, {}};
  bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok());
  loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  ASSERT_EQ((*loaded)->num_segments(), 3u);
  EXPECT_EQ((*loaded)->segment(0).size(), 0u);
  EXPECT_EQ((*loaded)->segment(1).size(), 3u);
  EXPECT_EQ((*loaded)->segment(2).size(), 0u);
}

TEST(ProgramRoundTrip, ValuesKeepNonDefaultFields) {
  // Fields a kind does not use still round-trip, so a loaded spec compares equal.
  ProgramSpec spec = testing::small_program();
  spec.methods[0].values[0].arena_offset = 12;
  spec.methods[0].values[0].alias_of = 3;
  spec.methods[0].values[0].constant = {0, 8, 16};
  spec.metadata["empty_string"] = std::string();
  spec.metadata["empty_list"] = std::vector<int64_t>{};
  spec.metadata["empty_names"] = std::vector<std::string>{};
  spec.metadata["false"] = false;
  spec.metadata["embedded\0nul"] = std::string("a\0b", 3);
  auto bytes = serialize_program(spec);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_TRUE((*loaded)->spec() == without_segments(spec));
}

TEST(ProgramWriter, ReplacesAtomicallyAndLeavesNoTemporary) {
  TempDir dir("writer_atomic");
  const std::string path = dir.file("p.kst");
  ASSERT_TRUE(write_program(testing::small_program(), path).ok());
  ASSERT_TRUE(write_program(rich_program(), path).ok());
  auto loaded = LoadedProgram::load_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_NE((*loaded)->find_method("prefill"), nullptr);
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
}

TEST(ProgramWriter, ReportsIoErrors) {
  TempDir dir("writer_io");
  auto status = write_program(testing::small_program(), dir.file("no/such/dir/p.kst"));
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kIo);
  EXPECT_NE(status.error().message().find("no/such/dir/p.kst"), std::string::npos) << status.error().message();
}

TEST(ProgramWriter, RefusesAnInvalidSpecWithoutWriting) {
  TempDir dir("writer_invalid");
  ProgramSpec spec = testing::small_program();
  spec.methods[0].instructions.push_back(KernelCall{"add", {0, 1}, {42}, {}});
  const std::string path = dir.file("p.kst");
  auto status = write_program(spec, path);
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(status.error().message().find("refusing to write an invalid program"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace kestrel::program
