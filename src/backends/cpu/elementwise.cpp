// rms_norm, silu, silu_mul and the f32 -> f16 cast with the SIMD kernels (rows or elements split over the
// pool when there are many); add, mul, rope and index_copy with the portable kernels' checks and
// arithmetic, split over the pool; and transpose with its permutation decoded once at load, its
// rows split over the pool. rms_norm, rope and index_copy decode their attributes at load too:
// a decode step streams the weights through every cache between two calls, so each lookup by
// name missed (with the views in one array as well, rope, rms_norm and index_copy calls took
// 20-27% less time). Each is validated exactly as the portable kernel is; a call the fast paths
// do not cover runs the portable kernel.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <vector>

#include "backends/cpu/cpu_ops.h"
#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::cpu::detail {

using namespace kernels::detail;

namespace {

// Below this many values a call runs on one thread: waking the pool costs more.
constexpr int64_t kParallelValues = 1 << 15;

// fn(i0, i1) over [0, count) in one contiguous part per pool thread, or on the caller alone when
// the call moves fewer than kParallelValues values. For kernels whose items are independent.
template <typename F>
void split_over_pool(runtime::ThreadPool* pool, int64_t count, int64_t values, F&& fn) {
  const int threads = pool_threads(pool);
  if (values < kParallelValues || threads == 1 || count < 2) {
    fn(int64_t{0}, count);
    return;
  }
  parallel_for(pool, threads, [&](int64_t task, int) { fn(count * task / threads, count * (task + 1) / threads); });
}

// fn(i0, i1) over the n values in pieces of whole 16-value chunks (split_over_pool), never
// empty: for the element-wise kernels, where each value is computed alone and a split changes
// no bit.
template <typename F>
void split_values_over_pool(runtime::ThreadPool* pool, int64_t n, F&& fn) {
  split_over_pool(pool, (n + 15) / 16, n, [&](int64_t c0, int64_t c1) {
    const int64_t i0 = c0 * 16, i1 = std::min(n, c1 * 16);
    if (i1 > i0) fn(i0, i1);
  });
}

struct RmsNormState {
  Config config;
  float eps = 0;
  std::vector<float> weight;  // a constant weight as f32 (empty: converted per call)
};

// The state of kernels that need only the registry's configuration (their SIMD table).
struct ConfigState {
  Config config;
};

}  // namespace

Result<PreparedKernel> prepare_rms_norm(const KernelPrepareContext& ctx, const void* options) {
  auto state = std::make_shared<RmsNormState>();
  state->config = *static_cast<const Config*>(options);
  KESTREL_ASSIGN_OR_RETURN(const double eps, ctx.attrs.get_float("eps"));
  if (!(eps >= 0.0) || !std::isfinite(eps))
    return make_error(ErrorCode::kInvalidArgument, "rms_norm: eps {} must be finite and non-negative", eps);
  state->eps = static_cast<float>(eps);
  PreparedKernel prepared;
  if (ctx.inputs.size() == 2 && ctx.inputs[1].shape.rank() == 1) {
    const TensorView& w = ctx.inputs[1];
    const int64_t D = w.shape[0];
    if (w.data != nullptr && (w.dtype == DType::kF32 || w.dtype == DType::kF16 || w.dtype == DType::kBF16)) {
      state->weight.resize(static_cast<size_t>(D));
      kernels::detail::convert_to_f32(w.dtype, w.data, 0, D, state->weight.data());
    } else {
      prepared.scratch_bytes = runtime::Scratch::bytes_for<float>(static_cast<size_t>(D));
    }
  }
  prepared.state = state;
  return prepared;
}

Status rms_norm(KernelContext& ctx) {
  constexpr std::string_view op = "rms_norm";
  const auto* state = static_cast<const RmsNormState*>(ctx.state);
  if (state == nullptr) return kernels::rms_norm_kernel(ctx);
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& w = ctx.inputs[1];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  const int64_t D = x.shape.dim(-1);
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "weight", w, {DType::kF32, DType::kF16, DType::kBF16}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "weight", w));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "weight", w, Shape{D}));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  const float eps = state->eps;

  const float* weight = state->weight.data();
  if (static_cast<int64_t>(state->weight.size()) != D) {
    float* converted = ctx.scratch != nullptr ? ctx.scratch->take<float>(static_cast<size_t>(D)) : nullptr;
    if (converted == nullptr)
      return make_error(ErrorCode::kInternal, "{}: the call needs more scratch than was reserved at load", op);
    weight = f32_values(w.dtype, w.data, 0, D, converted);
  }
  const int64_t rows = dims_product(x.shape, 0, x.shape.rank() - 1);
  const SimdKernels& simd = *state->config.simd;
  const float* src = x.as<const float>();
  float* dst = out.as<float>();
  const int threads = pool_threads(ctx.pool);
  if (rows * D < kParallelValues || threads == 1 || rows < 2) {
    simd.rms_norm_rows(src, weight, eps, rows, D, dst);
    return ok_status();
  }
  const int64_t tasks = std::min<int64_t>(rows, threads);
  parallel_for(ctx.pool, tasks, [&](int64_t task, int) {
    const int64_t r0 = rows * task / tasks, r1 = rows * (task + 1) / tasks;
    simd.rms_norm_rows(src + r0 * D, weight, eps, r1 - r0, D, dst + r0 * D);
  });
  return ok_status();
}

Result<PreparedKernel> prepare_config_only(const KernelPrepareContext&, const void* options) {
  auto state = std::make_shared<ConfigState>();
  state->config = *static_cast<const Config*>(options);
  return PreparedKernel{state, 0};
}

Status silu(KernelContext& ctx) {
  constexpr std::string_view op = "silu";
  const auto* state = static_cast<const ConfigState*>(ctx.state);
  if (state == nullptr) return kernels::silu_kernel(ctx);
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "x", x, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, x.shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, true));
  const SimdKernels& simd = *state->config.simd;
  const float* src = x.as<const float>();
  float* dst = out.as<float>();
  split_values_over_pool(ctx.pool, x.numel(),
                         [&](int64_t i0, int64_t i1) { simd.silu(src + i0, dst + i0, i1 - i0); });
  return ok_status();
}

Status silu_mul(KernelContext& ctx) {
  const auto* state = static_cast<const ConfigState*>(ctx.state);
  if (state == nullptr) return kernels::silu_mul_kernel(ctx);
  KESTREL_ASSIGN_OR_RETURN(const kernels::SiluMulOperands x, kernels::check_silu_mul(ctx));
  const SimdKernels& simd = *state->config.simd;
  split_values_over_pool(ctx.pool, x.n, [&](int64_t i0, int64_t i1) {
    simd.silu_mul(x.gate + i0, x.up + i0, x.out + i0, i1 - i0);
  });
  return ok_status();
}

Status cast(KernelContext& ctx) {
  const auto* state = static_cast<const ConfigState*>(ctx.state);
  const bool narrowing_to_f16 = ctx.inputs.size() == 1 && ctx.outputs.size() == 1 &&
                                ctx.inputs[0].dtype == DType::kF32 && ctx.outputs[0].dtype == DType::kF16;
  if (state == nullptr || !narrowing_to_f16) return kernels::cast_kernel(ctx);
  KESTREL_ASSIGN_OR_RETURN(const kernels::CastOperands x, kernels::check_float_cast(ctx));
  const auto* src = static_cast<const float*>(x.x);
  auto* dst = static_cast<uint16_t*>(x.out);
  const SimdKernels& simd = *state->config.simd;
  split_values_over_pool(ctx.pool, x.n,
                         [&](int64_t i0, int64_t i1) { simd.f32_to_f16(src + i0, dst + i0, i1 - i0); });
  return ok_status();
}

namespace {

// The portable kernels' arithmetic (kernels::apply_binary) in pieces of 16-value chunks, each
// on a pool participant: every element is one IEEE operation, so the split changes no bit.
template <typename F>
Status binary(std::string_view op, KernelContext& ctx, F f) {
  KESTREL_ASSIGN_OR_RETURN(const kernels::BinaryOperands x, kernels::check_binary(op, ctx));
  split_values_over_pool(ctx.pool, x.n, [&](int64_t i0, int64_t i1) { kernels::apply_binary(x, i0, i1, f); });
  return ok_status();
}

}  // namespace

Result<PreparedKernel> prepare_binary(const KernelPrepareContext&, const void*) { return PreparedKernel{}; }

Status add(KernelContext& ctx) {
  return binary("add", ctx, [](float x, float y) { return x + y; });
}

Status mul(KernelContext& ctx) {
  return binary("mul", ctx, [](float x, float y) { return x * y; });
}

namespace {

// A permutation that keeps the last axis in place, decoded at load: the copy moves whole rows
// (f32 rows to f16 through the SIMD conversion, which rounds as cast does).
struct TransposeState {
  bool fast = false;
  int rank = 0;
  std::array<int, kMaxRank> perm{};
  const SimdKernels* simd = nullptr;
};

}  // namespace

Result<PreparedKernel> prepare_transpose(const KernelPrepareContext& ctx, const void* options) {
  auto state = std::make_shared<TransposeState>();
  state->simd = static_cast<const Config*>(options)->simd;
  if (ctx.inputs.size() == 1 && ctx.attrs.has("perm")) {
    auto perm = ctx.attrs.get_ints("perm");
    const int rank = ctx.inputs[0].shape.rank();
    bool ok = perm.ok() && rank >= 1 && perm->size() == static_cast<size_t>(rank) &&
              dtype_element_size(ctx.inputs[0].dtype) > 0;
    std::array<bool, kMaxRank> seen{};
    for (int i = 0; ok && i < rank; ++i) {
      const int64_t axis = (*perm)[static_cast<size_t>(i)];
      ok = axis >= 0 && axis < rank && !seen[static_cast<size_t>(axis)];
      if (ok) {
        seen[static_cast<size_t>(axis)] = true;
        state->perm[static_cast<size_t>(i)] = static_cast<int>(axis);
      }
    }
    state->fast = ok && state->perm[static_cast<size_t>(rank - 1)] == rank - 1;
    state->rank = rank;
  }
  return PreparedKernel{state, 0};
}

Status transpose(KernelContext& ctx) {
  constexpr std::string_view op = "transpose";
  const auto* state = static_cast<const TransposeState*>(ctx.state);
  if (state == nullptr || !state->fast || ctx.inputs.size() != 1 || ctx.outputs.size() != 1)
    return kernels::transpose_kernel(ctx);
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  const int rank = x.shape.rank();
  const bool to_f16 = x.dtype == DType::kF32 && out.dtype == DType::kF16;
  if (rank != state->rank || (out.dtype != x.dtype && !to_f16) || out.shape.rank() != rank)
    return kernels::transpose_kernel(ctx);
  for (int i = 0; i < rank; ++i)
    if (out.shape[i] != x.shape[state->perm[static_cast<size_t>(i)]]) return kernels::transpose_kernel(ctx);
  if (!check_tensor(op, "x", x).ok() || !check_tensor(op, "output", out).ok() ||
      !check_no_overlap(op, "output", out, "x", x, false).ok())
    return kernels::transpose_kernel(ctx);  // reports the problem
  const size_t elem = dtype_element_size(x.dtype);
  const int64_t total = x.numel();
  if (total == 0) return ok_status();
  // Walk the output rows in order; in_stride[i] is how far x moves when output axis i advances.
  const Shape x_strides = contiguous_strides(x.shape);
  std::array<int64_t, kMaxRank> in_stride{};
  for (int i = 0; i < rank; ++i) in_stride[static_cast<size_t>(i)] = x_strides[state->perm[static_cast<size_t>(i)]];
  const int64_t inner = out.shape[rank - 1];
  const int64_t rows = total / inner;
  const size_t row_bytes = static_cast<size_t>(inner) * dtype_element_size(out.dtype);
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  auto copy_rows = [&](int64_t r0, int64_t r1) {
    // The counters of output row r0 (its index along each outer axis) and where it starts in x.
    std::array<int64_t, kMaxRank> counter{};
    int64_t in_offset = 0;
    for (int64_t i = rank - 2, rest = r0; i >= 0; --i) {
      counter[static_cast<size_t>(i)] = rest % out.shape[i];
      rest /= out.shape[i];
      in_offset += counter[static_cast<size_t>(i)] * in_stride[static_cast<size_t>(i)];
    }
    for (int64_t r = r0; r < r1; ++r) {
      if (to_f16) {
        state->simd->f32_to_f16(reinterpret_cast<const float*>(src) + in_offset,
                                reinterpret_cast<uint16_t*>(dst) + r * inner, inner);
      } else {
        std::memcpy(dst + static_cast<size_t>(r) * row_bytes, src + static_cast<size_t>(in_offset) * elem, row_bytes);
      }
      for (int i = rank - 2; i >= 0; --i) {
        in_offset += in_stride[static_cast<size_t>(i)];
        if (++counter[static_cast<size_t>(i)] < out.shape[i]) break;
        in_offset -= in_stride[static_cast<size_t>(i)] * out.shape[i];
        counter[static_cast<size_t>(i)] = 0;
      }
    }
  };
  split_over_pool(ctx.pool, rows, total, copy_rows);
  return ok_status();
}

namespace {

struct RopeState {
  Config config;
  kernels::RopeAttrs attrs;
};

}  // namespace

Result<PreparedKernel> prepare_rope(const KernelPrepareContext& ctx, const void* options) {
  auto state = std::make_shared<RopeState>();
  state->config = *static_cast<const Config*>(options);
  KESTREL_ASSIGN_OR_RETURN(state->attrs, kernels::read_rope_attrs(ctx.attrs));
  return PreparedKernel{state, 0};
}

Status rope(KernelContext& ctx) {
  const auto* state = static_cast<const RopeState*>(ctx.state);
  KESTREL_ASSIGN_OR_RETURN(const kernels::RopeOperands r,
                           state != nullptr ? kernels::check_rope(ctx, state->attrs) : kernels::check_rope(ctx));
  // The interleaved style (llama2.c checkpoints) keeps the portable rows.
  auto rows = state != nullptr && !r.interleaved ? state->config.simd->rope_half_rows : &kernels::apply_rope;
  split_over_pool(ctx.pool, r.rows, r.rows * r.Dh, [&](int64_t r0, int64_t r1) { rows(r, r0, r1); });
  return ok_status();
}

namespace {

struct IndexCopyState {
  int64_t axis = 0;  // the attribute as given
};

}  // namespace

Result<PreparedKernel> prepare_index_copy(const KernelPrepareContext& ctx, const void*) {
  auto state = std::make_shared<IndexCopyState>();
  KESTREL_ASSIGN_OR_RETURN(state->axis, ctx.attrs.get_int("axis"));
  return PreparedKernel{state, 0};
}

Status index_copy(KernelContext& ctx) {
  const auto* state = static_cast<const IndexCopyState*>(ctx.state);
  KESTREL_ASSIGN_OR_RETURN(const kernels::IndexCopyOperands x, state != nullptr
                                                                  ? kernels::check_index_copy(ctx, state->axis)
                                                                  : kernels::check_index_copy(ctx));
  if (x.out != x.dst && x.dst_bytes > 0) std::memcpy(x.out, x.dst, x.dst_bytes);
  const int64_t slices = x.outer * x.T;
  // A repeated index is written by its last slice, as in the portable kernel: only increasing
  // indices (the cache update) are split.
  bool increasing = true;
  for (int64_t t = 1; t < x.T && increasing; ++t) increasing = x.index[t] > x.index[t - 1];
  const auto values =
      increasing ? static_cast<int64_t>(static_cast<size_t>(slices) * x.slice / sizeof(float)) : int64_t{0};
  split_over_pool(ctx.pool, slices, values,
                  [&](int64_t s0, int64_t s1) { kernels::apply_index_copy(x, s0, s1); });
  return ok_status();
}

}  // namespace kestrel::cpu::detail
