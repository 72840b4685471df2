// linear: y[..., n] = sum_k x[..., k] * weight[n, k] + bias[n], output columns split over the
// thread pool. Validation is the portable kernel's, check for check.
#include <algorithm>
#include <vector>

#include "backends/cpu/avx2.h"
#include "backends/cpu/cpu_ops.h"
#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::cpu::detail {

using namespace kernels::detail;

Status linear(KernelContext& ctx, const Config& config) {
  if (config.isa == Isa::kScalar) return kernels::linear_kernel(ctx);
  KESTREL_ASSIGN_OR_RETURN(const kernels::LinearDims dims, kernels::check_linear(ctx));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  const TensorView* bias = dims.bias;
  TensorView& y = ctx.outputs[0];
  const int64_t M = dims.M, K = dims.K, N = dims.N;
  if (M == 0 || N == 0) return ok_status();

  LinearArgs args;
  args.dtype = w.dtype;
  args.w = w.data;
  args.x = x.as<const float>();
  args.bias = bias != nullptr ? bias->as<const float>() : nullptr;
  args.y = y.as<float>();
  args.M = M;
  args.K = K;
  args.N = N;
  args.int8_dot = config.isa == Isa::kAvxVnni      ? Int8Dot::kAvxVnni
                  : config.isa == Isa::kAvx512Vnni ? Int8Dot::kAvx512Vnni
                                                   : Int8Dot::kMaddubs;
  if (w.dtype == DType::kQ8 && config.q8_quantize_activations && K > 0) {
    // Quantized once here, read by every task. Grows, never shrinks: steady state allocates
    // nothing.
    thread_local std::vector<int8_t> quantized;
    thread_local std::vector<float> scales;
    const size_t blocks = static_cast<size_t>(M * (K / kQ8BlockSize));
    if (quantized.size() < static_cast<size_t>(M * K)) quantized.resize(static_cast<size_t>(M * K));
    if (scales.size() < blocks) scales.resize(blocks);
    if (quantize_rows_q8_avx2(args.x, M, K, quantized.data(), scales.data())) {
      args.xq = quantized.data();
      args.xd = scales.data();
    }  // else a non-finite activation: the f32 way propagates it like the reference does
  }

  // Each thread streams one contiguous share of the weight rows, in pieces of whole groups of
  // four rows (the prefill kernels' group, so results do not depend on the split); threads
  // that finish early take pieces from the back of the others' shares. Finer independent
  // tasks measured slower: every task restarts a prefetched stream.
  const int64_t groups = (N + 3) / 4;
  const int64_t piece_groups = std::max<int64_t>(1, groups / (int64_t{config.threads} * 8));
  config.pool->parallel_ranges(N, 4, piece_groups,
                               [&](int64_t n0, int64_t n1) { linear_rows_avx2(args, n0, n1); });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
