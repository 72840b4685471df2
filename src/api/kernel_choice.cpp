#include "kestrel/api/kernel_choice.h"

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::api {

Result<std::shared_ptr<const runtime::KernelRegistry>> kernel_registry_for(const std::string& kernels, int threads) {
  if (threads < 0)
    return make_error(ErrorCode::kInvalidArgument, "threads must be 0 (all cores) or more, got {}", threads);
  if (kernels == "portable") return kernels::portable_kernel_registry();
  if (kernels == "optimized") {
    cpu::CpuKernelOptions options;
    options.threads = threads;
    return cpu::optimized_kernel_registry(options);
  }
  return make_error(ErrorCode::kInvalidArgument, "kernels must be portable or optimized, got '{}'", kernels);
}

std::string kernel_description(const std::string& kernels, int threads) {
  if (kernels != "optimized") return kernels;
  cpu::CpuKernelOptions options;
  options.threads = threads;
  return std::string(cpu::isa_name(cpu::resolve_cpu_kernel_options(options).isa));
}

}  // namespace kestrel::api
