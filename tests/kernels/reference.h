// Naive float64 implementations of the ops, written from docs/ops.md independently of
// src/kernels (different loop structure and formulation where it matters), used as the oracle
// for the portable kernels. Tensors are flat row-major vectors; shapes are passed explicitly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kestrel::kernels::reference {

using Vec = std::vector<double>;
using Dims = std::vector<int64_t>;

// x [M, K], w [N, K], bias [N] or empty -> [M, N]
Vec linear(const Vec& x, int64_t M, int64_t K, const Vec& w, int64_t N, const Vec& bias);
// a [batch, M, K], b [batch, K, N] -> [batch, M, N]
Vec matmul(const Vec& a, const Vec& b, int64_t batch, int64_t M, int64_t K, int64_t N);
// table [V, D], ids -> [ids.size(), D]
Vec embedding(const Vec& table, int64_t D, const std::vector<int64_t>& ids);
// x [rows, D]
Vec rms_norm(const Vec& x, int64_t D, const Vec& weight, double eps);
Vec layer_norm(const Vec& x, int64_t D, const Vec& weight, const Vec& bias, double eps);
// x [B, H, T, Dh]; cos/sin [P, R/2] with R = rotary_dim (0: Dh); style "half" or
// "interleaved"; dims R..Dh-1 pass through.
Vec rope(const Vec& x, int64_t BH, int64_t T, int64_t Dh, const std::vector<int64_t>& positions,
         const Vec& cos, const Vec& sin, const std::string& style, int64_t rotary_dim = 0);
// softmax along `axis` of a tensor with `dims`
Vec softmax(const Vec& x, const Dims& dims, int axis);
// q [B, Hq, T, Dh], k/v [B, Hkv, C, Dh]; window > 0: slot s is visible to query t only when
// positions[t] - window < s (transformers' sliding mask kv_idx > q_idx - sliding_window).
Vec attention(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t Hq, int64_t Hkv,
              int64_t T, int64_t C, int64_t Dh, const std::vector<int64_t>& positions, double scale,
              int64_t window = 0);
double silu(double x);
double gelu_erf(double x);
double gelu_tanh(double x);
// Output axis i is input axis perm[i].
Vec transpose(const Vec& x, const Dims& dims, const Dims& perm);
// dst with slice index[t] along `axis` replaced by slice t of src.
Vec index_copy(const Vec& dst, const Dims& dims, int axis, const std::vector<int64_t>& index,
               const Vec& src);
Vec slice(const Vec& x, const Dims& dims, int axis, int64_t start, int64_t end);

}  // namespace kestrel::kernels::reference
