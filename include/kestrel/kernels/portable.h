// The portable reference kernels: clear scalar code, the oracle for optimized backends.
#pragma once

#include <memory>

#include "kestrel/runtime/kernel.h"

namespace kestrel::kernels {

// Adds every portable kernel to `registry` under its op name (see docs/ops.md).
void register_portable_kernels(runtime::KernelRegistry& registry);
// A shared registry holding the portable kernels.
std::shared_ptr<const runtime::KernelRegistry> portable_kernel_registry();

}  // namespace kestrel::kernels
