// Checksums: the description and every segment carry an XXH3-64 of their bytes, compared at load;
// a damaged byte anywhere in them is an error naming the part (and, for a segment, what it holds).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>

#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"
#include "program/format.h"
#include "program/program_builders.h"

namespace kestrel::program {
namespace {

using testing::TempDir;

// The rich program plus a tokenizer segment named by metadata, as an export writes it.
ProgramSpec program_with_tokenizer() {
  ProgramSpec spec = testing::rich_program();
  spec.metadata["tokenizer_segment"] = static_cast<int64_t>(spec.segments.size());
  spec.segments.push_back(testing::text_bytes("{\"model\": {\"type\": \"BPE\"}}"));
  return spec;
}

std::vector<uint8_t> serialized(const ProgramSpec& spec) {
  auto bytes = serialize_program(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

uint64_t le64(const std::vector<uint8_t>& bytes, size_t at) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value |= static_cast<uint64_t>(bytes[at + i]) << (8 * i);
  return value;
}

TEST(ProgramIntegrity, ChecksumsAreXxh3OfTheBytes) {
  const ProgramSpec spec = program_with_tokenizer();
  const auto bytes = serialized(spec);
  const uint64_t fb_offset = le64(bytes, format::kFlatbufferOffsetField);
  const uint64_t fb_size = le64(bytes, format::kFlatbufferSizeField);
  EXPECT_EQ(le64(bytes, format::kFlatbufferChecksumField), XXH3_64bits(bytes.data() + fb_offset, fb_size));

  auto loaded = LoadedProgram::load_bytes(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_TRUE((*loaded)->checksums_verified());
  ASSERT_EQ((*loaded)->num_segments(), spec.segments.size());
  for (uint32_t i = 0; i < spec.segments.size(); ++i) {
    const auto& expected = *spec.segments[i].held();
    EXPECT_EQ((*loaded)->segment_checksum(i), XXH3_64bits(expected.data(), expected.size())) << "segment " << i;
  }
}

TEST(ProgramIntegrity, DamagedSegmentByteIsAnErrorNamingTheSegment) {
  const ProgramSpec spec = program_with_tokenizer();
  const auto good = serialized(spec);
  auto reference = LoadedProgram::load_bytes(good);
  ASSERT_TRUE(reference.ok());
  const char* roles[] = {"constants", "payload of delegate 0 ('qnn')", "constants", "tokenizer"};
  for (uint32_t i = 0; i < (*reference)->num_segments(); ++i) {
    const auto segment = (*reference)->segment(i);
    const uint64_t file_offset = segment.data() - (*reference)->file_span().data();
    const uint64_t data_offset = le64(good, format::kDataOffsetField);
    for (uint64_t at : {uint64_t{0}, segment.size() / 2, segment.size() - 1}) {
      auto bytes = good;
      bytes[file_offset + at] ^= 0x04;
      auto loaded = LoadedProgram::load_bytes(bytes);
      ASSERT_FALSE(loaded.ok()) << "segment " << i << ", byte " << at;
      EXPECT_EQ(loaded.error().code(), ErrorCode::kCorrupt);
      const std::string expected = fmt::format("segment {} ({}), data bytes [{}, {}+{}): xxh3-64 checksum mismatch", i,
                                               roles[i], file_offset - data_offset, file_offset - data_offset,
                                               segment.size());
      EXPECT_NE(loaded.error().message().find(expected), std::string::npos) << loaded.error().message();
      EXPECT_NE(loaded.error().message().find("the file is damaged"), std::string::npos);

      // Skipping the checksums loads it, damaged byte and all.
      LoadOptions options;
      options.verify_checksums = false;
      auto unchecked = LoadedProgram::load_bytes(bytes, options);
      ASSERT_TRUE(unchecked.ok()) << unchecked.error().to_string();
      EXPECT_FALSE((*unchecked)->checksums_verified());
      EXPECT_EQ((*unchecked)->segment(i)[at], segment[at] ^ 0x04);
    }
  }
}

TEST(ProgramIntegrity, DamagedDescriptionIsAnError) {
  const auto good = serialized(program_with_tokenizer());
  const uint64_t fb_offset = le64(good, format::kFlatbufferOffsetField);
  const uint64_t fb_size = le64(good, format::kFlatbufferSizeField);
  // A flipped bit in a metadata string keeps the flatbuffer well formed: only the checksum sees it.
  const std::string needle = "hf_static";
  auto at = std::search(good.begin() + fb_offset, good.begin() + fb_offset + fb_size, needle.begin(), needle.end());
  ASSERT_NE(at, good.begin() + fb_offset + fb_size);
  auto bytes = good;
  bytes[at - good.begin()] ^= 0x20;  // 'h' -> 'H'
  auto loaded = LoadedProgram::load_bytes(bytes);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message().find(fmt::format("description (flatbuffer [56, 56+{})): xxh3-64 checksum mismatch",
                                                      fb_size)),
            std::string::npos)
      << loaded.error().message();
  LoadOptions options;
  options.verify_checksums = false;
  auto unchecked = LoadedProgram::load_bytes(bytes, options);
  ASSERT_TRUE(unchecked.ok()) << unchecked.error().to_string();
  EXPECT_EQ(std::get<std::string>((*unchecked)->spec().metadata.at("io_contract")), "Hf_static");
}

TEST(ProgramIntegrity, FileErrorsNameTheFileAndTheSegment) {
  TempDir dir("integrity_file");
  const std::string path = dir.file("p.kst");
  ASSERT_TRUE(write_program(program_with_tokenizer(), path).ok());
  auto bytes = testing::read_bytes(path);
  bytes[bytes.size() - 1] ^= 0xff;  // the tokenizer is the last segment
  testing::write_bytes(path, bytes);
  auto loaded = LoadedProgram::load_file(path);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message().rfind("program file '" + path + "': segment 3 (tokenizer)", 0), 0u)
      << loaded.error().message();
}

}  // namespace
}  // namespace kestrel::program
