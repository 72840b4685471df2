// The program file's fixed header and a few internal entry points shared by the writer, the
// loader and the tests. Not a public header: code outside src/program and tests/program uses
// kestrel/program/{writer,loaded_program}.h.
//
// File layout (all integers little-endian):
//   offset  size  field
//        0     8  magic "KESTREL\0"
//        8     4  format version (kFormatVersion)
//       12     4  flags (must be 0)
//       16     8  flatbuffer offset (multiple of 8, >= kHeaderBytes)
//       24     8  flatbuffer size
//       32     8  data offset (multiple of 64, >= flatbuffer end)
//       40     8  data size (the file ends exactly at data offset + data size)
//       48     8  flatbuffer checksum (XXH3-64 of the flatbuffer's bytes)
//   then the flatbuffer (schema/program.fbs, identifier "KSTL"), padding, and the data area:
//   every segment starts at a multiple of 64 inside it, so at a 64-byte aligned file offset.
//   The segment table in the flatbuffer holds each segment's XXH3-64.
//
// Version 1 (48-byte header, no checksums) is refused with a message asking for a re-export.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::program::format {

inline constexpr std::array<uint8_t, 8> kMagic = {'K', 'E', 'S', 'T', 'R', 'E', 'L', '\0'};
inline constexpr uint32_t kFormatVersion = 2;
inline constexpr uint64_t kHeaderBytes = 56;
inline constexpr uint64_t kFlatbufferAlignment = 8;
inline constexpr char kFlatbufferIdentifier[] = "KSTL";

struct Header {
  uint32_t format_version = kFormatVersion;
  uint32_t flags = 0;
  uint64_t flatbuffer_offset = 0;
  uint64_t flatbuffer_size = 0;
  uint64_t data_offset = 0;
  uint64_t data_size = 0;
  uint64_t flatbuffer_checksum = 0;
};

// Field offsets inside the header, for tests that patch a file.
inline constexpr size_t kVersionField = 8;
inline constexpr size_t kFlagsField = 12;
inline constexpr size_t kFlatbufferOffsetField = 16;
inline constexpr size_t kFlatbufferSizeField = 24;
inline constexpr size_t kDataOffsetField = 32;
inline constexpr size_t kDataSizeField = 40;
inline constexpr size_t kFlatbufferChecksumField = 48;

void encode_header(const Header& header, uint8_t* out);  // writes kHeaderBytes
// Reads the header of a file of `bytes.size()` bytes and checks every range against it.
Result<Header> decode_header(std::span<const uint8_t> bytes);

// One segment's place in the data area and its checksum.
struct SegmentRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

// Writer internals exposed for tests that need files a correct writer would refuse to produce.
struct SerializeOptions {
  bool validate = true;
  // When set, replaces the segment table written into the flatbuffer, checksums included (the
  // data area is still laid out from spec.segments).
  std::optional<std::vector<SegmentRange>> segment_table;
};
Result<std::vector<uint8_t>> serialize(const ProgramSpec& spec, const SerializeOptions& options);

// The largest value kind a program may hold: the loader and the validator refuse any other.
inline constexpr uint32_t kMaxValueKind = static_cast<uint32_t>(ValueKind::kAlias);

// "[2, 3]": a shape as error messages and descriptions print it.
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace kestrel::program::format
