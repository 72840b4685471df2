// A verified program file, mapped read-only. Constants and payloads are spans into the map.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::program {

struct LoadOptions {
  // Compares the description's and every segment's checksum with the file's bytes, which reads
  // the whole file. Off, a damaged weight or tokenizer byte goes unnoticed (the structure is
  // still verified in full).
  bool verify_checksums = true;
};

class LoadedProgram {
 public:
  // Maps the file and verifies everything: magic, checksums, flatbuffer, every segment range,
  // every value's dtype/shape/bytes against its segment or the arena, arena sizes, every value
  // index in instructions.
  static Result<std::shared_ptr<const LoadedProgram>> load_file(const std::string& path,
                                                                const LoadOptions& options = {});
  // The same checks on bytes held in memory (copied into an aligned buffer).
  static Result<std::shared_ptr<const LoadedProgram>> load_bytes(std::span<const uint8_t> bytes,
                                                                 const LoadOptions& options = {});

  ~LoadedProgram();
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;

  // The decoded description; spec().segments is empty (use segment()).
  const ProgramSpec& spec() const { return spec_; }
  size_t num_segments() const { return segments_.size(); }
  std::span<const uint8_t> segment(uint32_t index) const { return segments_.at(index); }
  // The segment's XXH3-64 as the file records it.
  uint64_t segment_checksum(uint32_t index) const { return segment_checksums_.at(index); }
  // True when the checksums were compared with the bytes at load.
  bool checksums_verified() const { return checksums_verified_; }
  // Bytes of one constant value (already bounds-checked at load).
  std::span<const uint8_t> constant_bytes(const ValueSpec& value) const;
  const MethodSpec* find_method(std::string_view name) const;
  uint64_t file_bytes() const { return size_; }
  // The file format version from the header (the program version is spec().version).
  uint32_t format_version() const { return format_version_; }
  // Every byte of the file: the read-only mapping (load_file) or the aligned copy (load_bytes).
  // Segments and constants are subspans of it.
  std::span<const uint8_t> file_span() const { return {base_, static_cast<size_t>(size_)}; }
  // True when the bytes are a mapping of the file rather than a copy.
  bool is_mapped() const { return mapping_ != nullptr; }

 private:
  LoadedProgram() = default;
  friend class ProgramLoader;

  ProgramSpec spec_;
  std::vector<std::span<const uint8_t>> segments_;
  std::vector<uint64_t> segment_checksums_;
  bool checksums_verified_ = false;
  const uint8_t* base_ = nullptr;
  uint64_t size_ = 0;
  uint32_t format_version_ = 0;
  void* mapping_ = nullptr;       // munmap on destruction when non-null
  uint8_t* owned_copy_ = nullptr; // free on destruction when non-null
};

}  // namespace kestrel::program
