// Small decoders exported in memory for the end-to-end tests of the optimized kernels: a
// fixture checkpoint written to a temporary directory, exported with the given weight dtype,
// verified and loaded like a program file, then driven through the hf_static IOManager.
#pragma once

#include <memory>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/spec.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::testing {

// hidden 64, 4 heads of 16 (2 kv heads), ffn 96, 2 layers, vocabulary 200 (not a multiple of
// 16: a partial output panel). `extra_prefill_steps` adds prefill buckets; `cache_dtype` is
// the KV caches' element type (f32 or f16); `cpu_fusions` runs the exporter's rewrites for the
// CPU after partitioning (ExportOptions::fold_head_transposes and fuse_silu_mul).
program::ProgramSpec small_model_spec(DType dtype, int64_t prefill_step, int64_t max_context,
                                      const std::vector<int64_t>& extra_prefill_steps = {},
                                      DType cache_dtype = DType::kF32, bool cpu_fusions = true);
// Serialized, verified and loaded like a program file (null on failure, reported).
std::shared_ptr<const program::LoadedProgram> load_program_spec(const program::ProgramSpec& spec);
std::shared_ptr<const program::LoadedProgram> export_small_model(DType dtype, int64_t prefill_step,
                                                                 int64_t max_context,
                                                                 const std::vector<int64_t>& extra_prefill_steps = {},
                                                                 DType cache_dtype = DType::kF32,
                                                                 bool cpu_fusions = true);
// An hf_static IOManager over the program with `kernels`, buffers on the heap.
std::unique_ptr<llm::HfStaticIOManager> load_io(std::shared_ptr<const program::LoadedProgram> program,
                                                std::shared_ptr<const runtime::KernelRegistry> kernels);

}  // namespace kestrel::cpu::testing
