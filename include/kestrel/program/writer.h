// Serializes a ProgramSpec: a fixed header, the flatbuffer, then 64-byte aligned segments, each
// with its checksum. Segments are streamed from their sources, so a program far larger than memory
// can be written.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::program {

struct WriteOptions {
  // Called as bytes reach the file, with the bytes written so far and the file's size (the last
  // call has written == total).
  std::function<void(uint64_t written, uint64_t total)> progress;
};

// Checks the spec (indices in range, constants inside their segments) and returns file bytes.
Result<std::vector<uint8_t>> serialize_program(const ProgramSpec& spec);
// The same bytes, streamed to a temporary file next to `path` that then replaces it. On any
// failure, and on SIGINT/SIGTERM/SIGHUP, the temporary file is removed and `path` is untouched.
Status write_program(const ProgramSpec& spec, const std::string& path, const WriteOptions& options = {});

}  // namespace kestrel::program
