// Internal entry points of the optimized CPU kernels. Each takes the configuration of the
// registry it was looked up from (a registry's kernels are thin per-slot wrappers, since a
// KernelFn is a plain function pointer without user data).
#pragma once

#include <cstdint>

#include "backends/cpu/thread_pool.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::detail {

using runtime::KernelContext;

struct Config {
  int threads = 1;
  Isa isa = Isa::kScalar;
  bool q8_quantize_activations = true;
  ThreadPool* pool = nullptr;  // threads - 1 workers; never null for a published slot
};

Status linear(KernelContext& ctx, const Config& config);
Status attention(KernelContext& ctx, const Config& config);
Status rms_norm(KernelContext& ctx, const Config& config);
Status silu(KernelContext& ctx, const Config& config);

}  // namespace kestrel::cpu::detail
