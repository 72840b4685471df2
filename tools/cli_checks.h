// Checks for command-line values. CLI11 converts integers loosely (it saturates out-of-range
// values, reads "010" as octal and wraps "-1" into an unsigned option), so integer options are
// checked as decimal text first; these validators do it and name the accepted range.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::tools {

// A decimal integer in [min, max].
CLI::Validator integer_in(int64_t min, int64_t max);
// A decimal integer in [0, 2^64 - 1] (sampling seeds).
CLI::Validator unsigned_integer();
// Any text but the empty string.
CLI::Validator non_empty_text();

// "unknown command 'frobnicate' (commands: ...; did you mean ...?)" when argv names no
// subcommand of `app` where one is expected; empty otherwise.
std::string unknown_command_message(const CLI::App& app, int argc, const char* const* argv);

}  // namespace kestrel::tools
