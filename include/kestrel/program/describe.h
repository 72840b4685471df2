// Human-readable summary of a loaded program (what `kestrel inspect` prints).
#pragma once

#include <string>

#include "kestrel/program/loaded_program.h"

namespace kestrel::program {

// Metadata, methods with their I/O (names, dtypes, shapes), arena bytes, instruction counts by
// kernel op and by backend, constant bytes, delegates with their compile specs.
std::string describe_program(const LoadedProgram& program);

}  // namespace kestrel::program
