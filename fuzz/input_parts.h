// Shared pieces of the fuzz targets: splitting one input into parts, and a scratch directory
// for targets whose code under test reads files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::fuzz {

// Parts of one input are separated by this line, so seeds stay readable text.
inline constexpr std::string_view kSeparator = "\n#--8<--#\n";

// Splits `data` at the first `parts - 1` separators; always returns exactly `parts` views
// (missing ones are empty).
std::vector<std::string_view> split_input(const uint8_t* data, size_t size, size_t parts);

// Joins parts with the separator (for the seed generator).
std::string join_parts(const std::vector<std::string>& parts);

// A directory private to this process, created on first use and removed at exit.
const std::string& scratch_dir();

// Writes `bytes` to scratch_dir()/name (replacing it) and returns the path.
std::string write_scratch_file(const std::string& name, std::string_view bytes);

}  // namespace kestrel::fuzz
