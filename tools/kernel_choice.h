// The kernel registry a command runs with: --kernels optimized (default) or portable, and
// --threads for the optimized set.
#pragma once

#include <memory>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::tools {

// threads: 0 uses every core; negative is an error naming --threads.
Result<std::shared_ptr<const runtime::KernelRegistry>> kernel_registry_for(const std::string& kernels, int threads);
// "portable", or the optimized set's instruction set name ("avx512_bf16", "scalar", ...).
std::string kernel_description(const std::string& kernels, int threads);

}  // namespace kestrel::tools
