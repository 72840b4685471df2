// The portable kernel entry points, one per op of docs/ops.md; registry.cpp maps names to them.
#pragma once

#include <algorithm>

#include "kestrel/runtime/kernel.h"

namespace kestrel::kernels {

using runtime::KernelContext;

Status embedding_kernel(KernelContext& ctx);
Status rms_norm_kernel(KernelContext& ctx);
Status layer_norm_kernel(KernelContext& ctx);
Status linear_kernel(KernelContext& ctx);
// The linear kernel's input checks, shared with optimized implementations.
struct LinearDims {
  int64_t M, K, N;           // rows of x, reduction length, output columns
  const TensorView* bias;    // null when absent
};
Result<LinearDims> check_linear(const KernelContext& ctx);
Status matmul_kernel(KernelContext& ctx);
Status rope_kernel(KernelContext& ctx);
Status softmax_kernel(KernelContext& ctx);
Status attention_kernel(KernelContext& ctx);
// The attention kernel's input checks (shapes, dtypes, positions in range, scale attribute),
// shared with optimized implementations.
struct AttentionDims {
  int64_t B, Hq, Hkv, T, C, Dh;
  float scale;
  int64_t window;  // 0: every slot up to the position; > 0: only the last `window` of them
  // The first cache slot query t reads: positions[t] - window + 1 (clamped at 0) or 0.
  int64_t first_slot(int64_t position) const {
    return window > 0 && position >= window ? position - window + 1 : 0;
  }
};
Result<AttentionDims> check_attention(const KernelContext& ctx);
Status silu_kernel(KernelContext& ctx);
Status gelu_kernel(KernelContext& ctx);
Status mul_kernel(KernelContext& ctx);
Status add_kernel(KernelContext& ctx);
// The binary kernels' input checks (`op` names the op in errors), shared with optimized
// implementations: out[i] = f(a[i], b[i % nb]) for i < n.
struct BinaryOperands {
  const float* a;
  const float* b;
  float* out;
  int64_t n, nb;  // nb divides n (b is a or a suffix of it); nb == 0 only when n == 0
};
Result<BinaryOperands> check_binary(std::string_view op, const KernelContext& ctx);
// out[i] = f(a[i], b[i % nb]) for i in [i0, i1): the binary kernels' arithmetic, for any range.
template <typename F>
void apply_binary(const BinaryOperands& x, int64_t i0, int64_t i1, F f) {
  for (int64_t i = i0; i < i1;) {
    const int64_t j = i % x.nb, run = std::min(i1 - i, x.nb - j);
    for (int64_t k = 0; k < run; ++k) x.out[i + k] = f(x.a[i + k], x.b[j + k]);
    i += run;
  }
}
Status argmax_kernel(KernelContext& ctx);
Status index_copy_kernel(KernelContext& ctx);
Status reshape_kernel(KernelContext& ctx);
Status transpose_kernel(KernelContext& ctx);
Status slice_kernel(KernelContext& ctx);
Status cast_kernel(KernelContext& ctx);

}  // namespace kestrel::kernels
