// embedding: out[..., t, :] = table[ids[..., t], :], rows converted from the table's dtype.
#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

Status embedding_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "embedding";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 2, 2, 1));
  const TensorView& table = ctx.inputs[0];
  const TensorView& ids = ctx.inputs[1];
  const TensorView& out = ctx.outputs[0];

  KESTREL_RETURN_IF_ERROR(
      check_dtype(op, "table", table, {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}));
  KESTREL_RETURN_IF_ERROR(check_rank(op, "table", table, 2));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "table", table));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "ids", ids, {DType::kI64}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "ids", ids));
  const int64_t V = table.shape[0];
  const int64_t D = table.shape[1];
  KESTREL_ASSIGN_OR_RETURN(Shape out_shape, with_appended_dim(op, ids.shape, D));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {DType::kF32}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, out_shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "ids", ids, false));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "table", table, false));

  // Every id is checked before anything is written, so a bad id leaves the output untouched.
  const int64_t* id = ids.as<const int64_t>();
  const int64_t count = ids.numel();
  for (int64_t i = 0; i < count; ++i)
    if (id[i] < 0 || id[i] >= V)
      return make_error(ErrorCode::kOutOfRange, "{}: id {} (ids element {}) is outside [0, {})", op,
                        id[i], i, V);
  float* dst = out.as<float>();
  for (int64_t i = 0; i < count; ++i) convert_to_f32(table.dtype, table.data, id[i] * D, D, dst + i * D);
  return ok_status();
}

}  // namespace kestrel::kernels
