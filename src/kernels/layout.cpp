// Data movement: reshape, transpose, slice. They work on any dtype with a fixed element size
// (not q8, except reshape, which only moves bytes). A transpose of f32 may write f16, rounding
// each value as cast does.
#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "kernels/check.h"
#include "kernels/convert.h"
#include "kernels/ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

using namespace detail;

namespace {

Result<size_t> element_size(std::string_view op, const TensorView& t) {
  const size_t elem = dtype_element_size(t.dtype);
  if (elem == 0)
    return make_error(ErrorCode::kUnsupported, "{}: x has dtype {}, which has no element size", op,
                      dtype_name(t.dtype));
  return elem;
}

// Copies a strided walk of `count` elements; a fixed-size type lets the compiler emit plain
// loads and stores instead of a memcpy call per element.
template <typename T>
void strided_copy(const uint8_t* src, int64_t stride, int64_t count, uint8_t* dst) {
  const T* s = reinterpret_cast<const T*>(src);
  T* d = reinterpret_cast<T*>(dst);
  for (int64_t i = 0; i < count; ++i) d[i] = s[i * stride];
}

void strided_copy_any(size_t elem, const uint8_t* src, int64_t stride, int64_t count, uint8_t* dst) {
  switch (elem) {
    case 1: return strided_copy<uint8_t>(src, stride, count, dst);
    case 2: return strided_copy<uint16_t>(src, stride, count, dst);
    case 4: return strided_copy<uint32_t>(src, stride, count, dst);
    default: return strided_copy<uint64_t>(src, stride, count, dst);
  }
}

}  // namespace

Status reshape_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "reshape";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {x.dtype}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  if (out.numel() != x.numel())
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: output has shape {} ({} elements) but x has shape {} ({} elements)", op,
                      out.shape.to_string(), out.numel(), x.shape.to_string(), x.numel());
  if (ctx.attrs.has("shape")) {
    // The attribute may hold one -1 (inferred); it must describe the output it came with.
    KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> dims, ctx.attrs.get_ints("shape"));
    bool matches = dims.size() == static_cast<size_t>(out.shape.rank());
    for (size_t i = 0; matches && i < dims.size(); ++i)
      matches = dims[i] == out.shape[static_cast<int>(i)] || dims[i] == -1;
    if (!matches)
      return make_error(ErrorCode::kInvalidArgument,
                        "{}: output has shape {} but the shape attribute is [{}]", op,
                        out.shape.to_string(), fmt::join(dims, ", "));
  }
  KESTREL_ASSIGN_OR_RETURN(size_t x_bytes, x.storage_bytes());
  KESTREL_ASSIGN_OR_RETURN(size_t out_bytes, out.storage_bytes());
  if (x_bytes != out_bytes)  // only q8 can get here, when a row stops being whole blocks
    return make_error(ErrorCode::kInvalidArgument, "{}: output needs {} bytes but x has {}", op,
                      out_bytes, x_bytes);
  // An alias (the usual case, emitted by exporters) needs no copy.
  if (out.data != x.data && x_bytes > 0) std::memmove(out.data, x.data, x_bytes);
  return ok_status();
}

Status transpose_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "transpose";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_ASSIGN_OR_RETURN(size_t elem, element_size(op, x));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> perm_attr, ctx.attrs.get_ints("perm"));
  const int rank = x.shape.rank();
  if (perm_attr.size() != static_cast<size_t>(rank))
    return make_error(ErrorCode::kInvalidArgument, "{}: perm [{}] has {} entries but x has rank {}",
                      op, fmt::join(perm_attr, ", "), perm_attr.size(), rank);
  std::array<int, kMaxRank> perm{};
  std::array<bool, kMaxRank> seen{};
  for (int i = 0; i < rank; ++i) {
    KESTREL_ASSIGN_OR_RETURN(perm[i], normalize_axis(op, "perm entry", perm_attr[i], rank));
    if (seen[perm[i]])
      return make_error(ErrorCode::kInvalidArgument, "{}: perm [{}] repeats axis {}", op,
                        fmt::join(perm_attr, ", "), perm[i]);
    seen[perm[i]] = true;
  }
  Shape out_shape = x.shape;
  for (int i = 0; i < rank; ++i) out_shape[i] = x.shape[perm[i]];
  const bool to_f16 = x.dtype == DType::kF32 && out.dtype == DType::kF16;
  if (!to_f16) KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {x.dtype}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, out_shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, false));
  const int64_t total = x.numel();
  if (total == 0) return ok_status();
  if (rank == 0) {
    if (to_f16) {
      store_float(DType::kF16, out.data, 0, *x.as<const float>());
    } else {
      std::memcpy(out.data, x.data, elem);
    }
    return ok_status();
  }

  // Walk the output in order; in_stride[i] is how far x moves when output axis i advances.
  const Shape x_strides = contiguous_strides(x.shape);
  std::array<int64_t, kMaxRank> in_stride{};
  for (int i = 0; i < rank; ++i) in_stride[i] = x_strides[perm[i]];
  const int64_t inner = out_shape[rank - 1];
  std::array<int64_t, kMaxRank> counter{};
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  int64_t in_offset = 0;
  for (int64_t done = 0; done < total; done += inner) {
    if (to_f16) {
      const float* row = x.as<const float>() + in_offset;
      for (int64_t i = 0; i < inner; ++i) store_float(DType::kF16, out.data, done + i, row[i * in_stride[rank - 1]]);
    } else {
      strided_copy_any(elem, src + static_cast<size_t>(in_offset) * elem, in_stride[rank - 1], inner,
                       dst + static_cast<size_t>(done) * elem);
    }
    // Advance the odometer over the outer output axes.
    for (int i = rank - 2; i >= 0; --i) {
      in_offset += in_stride[i];
      if (++counter[i] < out_shape[i]) break;
      in_offset -= in_stride[i] * out_shape[i];
      counter[i] = 0;
    }
  }
  return ok_status();
}

Status slice_kernel(KernelContext& ctx) {
  constexpr std::string_view op = "slice";
  KESTREL_RETURN_IF_ERROR(check_arity(op, ctx, 1, 1, 1));
  const TensorView& x = ctx.inputs[0];
  const TensorView& out = ctx.outputs[0];
  KESTREL_RETURN_IF_ERROR(check_min_rank(op, "x", x, 1));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "x", x));
  KESTREL_ASSIGN_OR_RETURN(size_t elem, element_size(op, x));
  KESTREL_ASSIGN_OR_RETURN(int64_t axis_attr, ctx.attrs.get_int("axis"));
  KESTREL_ASSIGN_OR_RETURN(int axis, normalize_axis(op, "axis", axis_attr, x.shape.rank()));
  const int64_t dim = x.shape[axis];
  KESTREL_ASSIGN_OR_RETURN(int64_t start, ctx.attrs.get_int("start"));
  KESTREL_ASSIGN_OR_RETURN(int64_t end, int_attr_or(ctx, "end", dim));
  // Python slice rules: negative counts from the end, then clamp to [0, dim].
  auto resolve = [dim](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + dim : i, 0, dim); };
  start = resolve(start);
  end = std::max(resolve(end), start);
  const int64_t len = end - start;
  Shape out_shape = x.shape;
  out_shape[axis] = len;
  KESTREL_RETURN_IF_ERROR(check_dtype(op, "output", out, {x.dtype}));
  KESTREL_RETURN_IF_ERROR(check_tensor(op, "output", out));
  KESTREL_RETURN_IF_ERROR(check_shape(op, "output", out, out_shape));
  KESTREL_RETURN_IF_ERROR(check_no_overlap(op, "output", out, "x", x, false));

  const int64_t outer = dims_product(x.shape, 0, axis);
  const size_t inner = static_cast<size_t>(dims_product(x.shape, axis + 1, x.shape.rank())) * elem;
  if (inner == 0 || len == 0) return ok_status();
  const auto* src = static_cast<const uint8_t*>(x.data);
  auto* dst = static_cast<uint8_t*>(out.data);
  // Each outer index contributes one contiguous run of len slices.
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + static_cast<size_t>(o * len) * inner,
                src + static_cast<size_t>(o * dim + start) * inner, static_cast<size_t>(len) * inner);
  return ok_status();
}

}  // namespace kestrel::kernels
