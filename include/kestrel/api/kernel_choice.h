// The CPU kernel registry a runner uses: "optimized" (SIMD, multi-threaded) or "portable".
#pragma once

#include <memory>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::api {

// threads: 0 uses every core; a negative count or an unknown kernel set is an error.
Result<std::shared_ptr<const runtime::KernelRegistry>> kernel_registry_for(const std::string& kernels, int threads);
// "portable", or the optimized set's instruction set name ("avx512_bf16", "scalar", ...).
std::string kernel_description(const std::string& kernels, int threads);

}  // namespace kestrel::api
