// What `kestrel export` reads, so it never replaces one of those files with the program it writes.
#pragma once

#include <string>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::api {

// Refuses an `output` that is one of `inputs` (files), or a file inside one of them (checkpoint
// directories) other than an earlier Kestrel program. Files are compared by device and inode, so
// a symlink or another spelling of the same path is caught. An output that does not exist yet is
// never an input.
Status refuse_overwriting_inputs(const std::string& output, const std::vector<std::string>& inputs);

}  // namespace kestrel::api
