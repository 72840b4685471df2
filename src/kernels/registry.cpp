#include "kernels/ops.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::kernels {

void register_portable_kernels(runtime::KernelRegistry& registry) {
  registry.add("embedding", embedding_kernel);
  registry.add("rms_norm", rms_norm_kernel);
  registry.add("layer_norm", layer_norm_kernel);
  registry.add("linear", linear_kernel);
  registry.add("matmul", matmul_kernel);
  registry.add("rope", rope_kernel);
  registry.add("softmax", softmax_kernel);
  registry.add("attention", attention_kernel);
  registry.add("silu", silu_kernel);
  registry.add("silu_mul", silu_mul_kernel);
  registry.add("gelu", gelu_kernel);
  registry.add("mul", mul_kernel);
  registry.add("add", add_kernel);
  registry.add("argmax", argmax_kernel);
  registry.add("index_copy", index_copy_kernel);
  registry.add("reshape", reshape_kernel);
  registry.add("transpose", transpose_kernel);
  registry.add("slice", slice_kernel);
  registry.add("cast", cast_kernel);
}

std::shared_ptr<const runtime::KernelRegistry> portable_kernel_registry() {
  // Built once on first use; immutable afterwards, so sharing it across threads is safe.
  static const std::shared_ptr<const runtime::KernelRegistry> registry = [] {
    auto r = std::make_shared<runtime::KernelRegistry>();
    register_portable_kernels(*r);
    return r;
  }();
  return registry;
}

}  // namespace kestrel::kernels
