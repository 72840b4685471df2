// matmul: out[..., m, n] = sum_k a[..., m, k] * b[..., k, n] for every leading index.
#include <cstring>

#include "kernels/check.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Status matmul_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "matmul";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& a = ctx.inputs[0];
  const TensorView& b = ctx.inputs[1];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "a", a, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "a", a, 2));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "a", a));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "b", b, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "b", b, a.shape.rank()));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "b", b));
  const int rank = a.shape.rank();
  for (int i = 0; i < rank - 2; ++i)
    if (a.shape[i] != b.shape[i])
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: b has leading dims {} but a has {} (axis {} differs)", op,
                        b.shape.to_string(), a.shape.to_string(), i);
  const int64_t M = a.shape.dim(-2);
  const int64_t K = a.shape.dim(-1);
  const int64_t N = b.shape.dim(-1);
  if (b.shape.dim(-2) != K)
    return make_error(ErrorCode::kInvalidArgument, "{}: b has K={} but a has K={}", op,
                      b.shape.dim(-2), K);
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  Shape expected = a.shape;
  expected[rank - 1] = N;
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, expected));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "a", a, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "b", b, false));

  const int64_t batch = dims_product(a.shape, 0, rank - 2);
  for (int64_t i = 0; i < batch; ++i) {
    const float* A = a.as<const float>() + i * M * K;
    const float* B = b.as<const float>() + i * K * N;
    float* C = out.as<float>() + i * M * N;
    // i-k-j order: the inner loop runs along contiguous rows of B and C.
    for (int64_t m = 0; m < M; ++m) {
      float* c = C + m * N;
      std::memset(c, 0, static_cast<size_t>(N) * sizeof(float));
      for (int64_t k = 0; k < K; ++k) {
        const float s = A[m * K + k];
        const float* brow = B + k * N;
        for (int64_t n = 0; n < N; ++n) c[n] += s * brow[n];
      }
    }
  }
  return ok_status();
}

}  // namespace kestrel::kernels
