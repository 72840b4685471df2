// Internal entry points of the optimized CPU kernels. Each op has a prepare step (run once per
// instruction when a method loads: decodes attributes, repacks constant weights, sizes the
// scratch a call needs) and a run function that reads that state from its call context.
#pragma once

#include "backends/cpu/simd/simd_kernels.h"
#include "backends/cpu/thread_pool.h"
#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::detail {

using runtime::KernelContext;
using runtime::KernelPrepareContext;
using runtime::PreparedKernel;

// The configuration of a registry, handed to every prepare step as the kernel's options.
struct Config {
  Isa isa = Isa::kScalar;  // never kScalar for a registry with optimized kernels
  bool q8_quantize_activations = true;
  StreamPrefetch stream_prefetch;  // LinearOperands::stream_prefetch, per weight format
  DecodePanels decode_panels;      // LinearOperands::decode_panels, per weight format
  const SimdKernels* simd = nullptr;
};

Result<PreparedKernel> prepare_linear(const KernelPrepareContext& ctx, const void* config);
Status linear(KernelContext& ctx);
Result<PreparedKernel> prepare_attention(const KernelPrepareContext& ctx, const void* config);
Status attention(KernelContext& ctx);
Result<PreparedKernel> prepare_rms_norm(const KernelPrepareContext& ctx, const void* config);
Status rms_norm(KernelContext& ctx);
// silu, silu_mul and cast prepare nothing but their configuration (the SIMD table).
Result<PreparedKernel> prepare_config_only(const KernelPrepareContext& ctx, const void* config);
Status silu(KernelContext& ctx);
Status silu_mul(KernelContext& ctx);
// add and mul: the portable kernels' checks and arithmetic, split over the pool.
Result<PreparedKernel> prepare_binary(const KernelPrepareContext& ctx, const void* config);
Status add(KernelContext& ctx);
Status mul(KernelContext& ctx);
Result<PreparedKernel> prepare_transpose(const KernelPrepareContext& ctx, const void* config);
Status transpose(KernelContext& ctx);
// cast: f32 -> f16 with the SIMD conversion (the KV-cache writes of f16-cache programs), split
// over the pool; every other cast runs the portable kernel.
Status cast(KernelContext& ctx);
// rope (the SIMD rows for the half style, the portable ones otherwise) and index_copy: the
// portable kernels' checks and arithmetic with the attributes decoded at prepare, split over
// the pool.
Result<PreparedKernel> prepare_rope(const KernelPrepareContext& ctx, const void* config);
Status rope(KernelContext& ctx);
Result<PreparedKernel> prepare_index_copy(const KernelPrepareContext& ctx, const void* config);
Status index_copy(KernelContext& ctx);

// The pool's thread count, 1 without a pool.
inline int pool_threads(const runtime::ThreadPool* pool) { return pool != nullptr ? pool->threads() : 1; }

}  // namespace kestrel::cpu::detail
