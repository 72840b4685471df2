// Serializes a ProgramSpec: a fixed header, the flatbuffer, then 64-byte aligned segments.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::program {

// Checks the spec (indices in range, constants inside their segments) and returns file bytes.
Result<std::vector<uint8_t>> serialize_program(const ProgramSpec& spec);
// serialize_program, then writes to `path` atomically (temporary file + rename).
Status write_program(const ProgramSpec& spec, const std::string& path);

}  // namespace kestrel::program
