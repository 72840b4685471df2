// The portable kernel entry points, one per op of docs/ops.md; registry.cpp maps names to them.
#pragma once

#include <algorithm>
#include <optional>

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
// The rope kernel's checks, shared with optimized implementations. Tables that are not f32 are
// converted for the T rows in use into the calling thread's scratch, valid until its next call.
struct RopeOperands {
  const float* x;
  float* out;
  const int64_t* positions;
  const float* cos;     // row p at cos + p * half: p a position, or a token when rows_per_token
  const float* sin;
  bool rows_per_token;
  bool interleaved;     // pairs (2i, 2i + 1); otherwise (i, i + half)
  int64_t rows, T, Dh, half, rotary;  // rows = B * H * T
  // Row r is token r % T ([B, H, T, Dh]), or with tokens_first token r / H % T ([B, T, H, Dh]).
  bool tokens_first = false;
  int64_t H = 1;
  int64_t token(int64_t row) const { return tokens_first ? row / H % T : row % T; }
};
// rope's attributes, decoded once: by an optimized kernel's prepare step, so a call looks up
// no attribute by name.
struct RopeAttrs {
  bool interleaved = false;           // style "interleaved"; otherwise "half"
  bool tokens_first = false;          // layout "bthd"
  std::optional<int64_t> rotary_dim;  // absent: the head size
};
Result<RopeAttrs> read_rope_attrs(const runtime::AttrReader& attrs);
Result<RopeOperands> check_rope(const KernelContext& ctx, const RopeAttrs& attrs);
Result<RopeOperands> check_rope(const KernelContext& ctx);  // reads the attributes too
// Rotates rows [row0, row1): the rope kernel's arithmetic, for any range (one compiled body,
// so a split gives the same bits).
void apply_rope(const RopeOperands& r, int64_t row0, int64_t row1);
Status softmax_kernel(KernelContext& ctx);
Status attention_kernel(KernelContext& ctx);
// The attention kernel's input checks (shapes, dtypes, positions in range, scale attribute),
// shared with optimized implementations.
struct AttentionDims {
  int64_t B, Hq, Hkv, T, C, Dh;
  float scale;
  int64_t window;  // 0: every slot up to the position; > 0: only the last `window` of them
  bool tokens_first;  // q and out are [B, T, Hq, Dh] (layout "bthd"), else [B, Hq, T, Dh]
  // The element offset of row (b, h, t) of q and out.
  int64_t q_offset(int64_t b, int64_t h, int64_t t) const {
    return (tokens_first ? (b * T + t) * Hq + h : (b * Hq + h) * T + t) * Dh;
  }
  // The first cache slot query t reads: positions[t] - window + 1 (clamped at 0) or 0.
  int64_t first_slot(int64_t position) const {
    return window > 0 && position >= window ? position - window + 1 : 0;
  }
};
// attention's attributes, decoded once (as RopeAttrs).
struct AttentionAttrs {
  bool tokens_first = false;     // layout "bthd"
  std::optional<double> scale;   // absent: 1 / sqrt(head size)
  int64_t window = 0;            // checked: 0 or positive
};
Result<AttentionAttrs> read_attention_attrs(const runtime::AttrReader& attrs);
Result<AttentionDims> check_attention(const KernelContext& ctx, const AttentionAttrs& attrs);
Result<AttentionDims> check_attention(const KernelContext& ctx);  // reads the attributes too
Status silu_kernel(KernelContext& ctx);
// silu(x) = x / (1 + e^-x), the silu kernel's arithmetic.
float silu_value(float x);
Status silu_mul_kernel(KernelContext& ctx);
// The silu_mul kernel's checks, shared with optimized implementations: out[i] =
// silu(gate[i]) * up[i] for i < n.
struct SiluMulOperands {
  const float* gate;
  const float* up;
  float* out;
  int64_t n;
};
Result<SiluMulOperands> check_silu_mul(const KernelContext& ctx);
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
// The index_copy kernel's checks (every index in range), shared with optimized implementations.
// The kernel copies dst to out when they differ, then the T slices of each of `outer` blocks.
struct IndexCopyOperands {
  uint8_t* out;
  const uint8_t* dst;
  const uint8_t* src;
  const int64_t* index;
  size_t dst_bytes, slice;  // slice: bytes of one index position
  int64_t outer, T, C;
};
// `axis` is the attribute as given (normalized against dst's rank by the check).
Result<IndexCopyOperands> check_index_copy(const KernelContext& ctx, int64_t axis);
Result<IndexCopyOperands> check_index_copy(const KernelContext& ctx);  // reads `axis` too
// Copies src slices [s0, s1) of the outer * T (slice s is block s / T, index s % T).
void apply_index_copy(const IndexCopyOperands& x, int64_t s0, int64_t s1);
Status reshape_kernel(KernelContext& ctx);
Status transpose_kernel(KernelContext& ctx);
Status slice_kernel(KernelContext& ctx);
Status cast_kernel(KernelContext& ctx);
// The float cast's checks (dtype attribute, shapes, overlap), shared with optimized
// implementations: n elements of x.dtype at x become out.dtype at out. Not for i64 -> i32.
struct CastOperands {
  const void* x;
  void* out;
  DType from, to;
  int64_t n;
};
Result<CastOperands> check_float_cast(const KernelContext& ctx);

}  // namespace kestrel::kernels
