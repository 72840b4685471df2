// The portable kernel entry points, one per op of docs/ops.md; registry.cpp maps names to them.
#pragma once

#include "kestrel/runtime/kernel.h"

namespace kestrel::kernels {

using runtime::KernelContext;

Status embedding_kernel(KernelContext& ctx);
Status rms_norm_kernel(KernelContext& ctx);
Status layer_norm_kernel(KernelContext& ctx);
Status linear_kernel(KernelContext& ctx);
Status matmul_kernel(KernelContext& ctx);
Status rope_kernel(KernelContext& ctx);
Status softmax_kernel(KernelContext& ctx);
Status attention_kernel(KernelContext& ctx);
Status silu_kernel(KernelContext& ctx);
Status gelu_kernel(KernelContext& ctx);
Status mul_kernel(KernelContext& ctx);
Status add_kernel(KernelContext& ctx);
Status argmax_kernel(KernelContext& ctx);
Status index_copy_kernel(KernelContext& ctx);
Status reshape_kernel(KernelContext& ctx);
Status transpose_kernel(KernelContext& ctx);
Status slice_kernel(KernelContext& ctx);
Status cast_kernel(KernelContext& ctx);

}  // namespace kestrel::kernels
