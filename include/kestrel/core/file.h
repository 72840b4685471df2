// Reads a whole input file with a size bound. A directory, a device that never ends
// (/dev/zero) or a file larger than the caller allows is an error naming the path, never an
// exception or an unbounded allocation. Pipes and character devices are read up to the bound.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel {

// `what` names the file's role in messages ("prompt file", "options file"). kNotFound when the
// path does not exist, kInvalidArgument for a directory, kCapacity past `max_bytes`, kIo otherwise.
Result<std::string> read_file_text(const std::string& path, uint64_t max_bytes, std::string_view what);
Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes, std::string_view what);

}  // namespace kestrel
