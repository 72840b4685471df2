#include "kernels/check.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <vector>

#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels::detail {

namespace {

std::string dtype_list(std::initializer_list<DType> allowed) {
  std::vector<std::string_view> names;
  for (DType d : allowed) names.push_back(dtype_name(d));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string count_range(size_t lo, size_t hi) {
  return lo == hi ? fmt::format("{}", lo) : fmt::format("{} to {}", lo, hi);
}

}  // namespace

Status check_arity(std::string_view op, const KernelContext& ctx, size_t min_inputs,
                   size_t max_inputs, size_t outputs) {
  if (ctx.inputs.size() < min_inputs || ctx.inputs.size() > max_inputs)
    return make_error(ErrorCode::kInvalidArgument, "{}: expected {} inputs, got {}", op,
                      count_range(min_inputs, max_inputs), ctx.inputs.size());
  if (ctx.outputs.size() != outputs)
    return make_error(ErrorCode::kInvalidArgument, "{}: expected {} output{}, got {}", op, outputs,
                      outputs == 1 ? "" : "s", ctx.outputs.size());
  return ok_status();
}

Status check_tensor(std::string_view op, std::string_view name, const TensorView& t) {
  if (t.shape.rank() != t.strides.rank() || !t.is_contiguous())
    return make_error(ErrorCode::kUnsupported,
                      "{}: {} is not contiguous (shape {}, strides {}); portable kernels need "
                      "row-major tensors",
                      op, name, t.shape.to_string(), t.strides.to_string());
  for (int64_t d : t.shape.dims())
    if (d < 0)
      return make_error(ErrorCode::kInvalidArgument, "{}: {} has a negative dimension in {}", op,
                        name, t.shape.to_string());
  auto bytes = t.storage_bytes();
  if (!bytes.ok())
    return make_error(ErrorCode::kInvalidArgument, "{}: {} ({} {}): {}", op, name,
                      dtype_name(t.dtype), t.shape.to_string(), bytes.error().message());
  if (*bytes > 0 && t.data == nullptr)
    return make_error(ErrorCode::kInvalidArgument, "{}: {} has no data", op, name);
  return ok_status();
}

Status check_dtype(std::string_view op, std::string_view name, const TensorView& t,
                   std::initializer_list<DType> allowed) {
  for (DType d : allowed)
    if (t.dtype == d) return ok_status();
  if (allowed.size() == 1)
    return make_error(ErrorCode::kInvalidArgument, "{}: {} has dtype {}, expected {}", op, name,
                      dtype_name(t.dtype), dtype_list(allowed));
  return make_error(ErrorCode::kInvalidArgument, "{}: {} has dtype {}, expected one of {}", op, name,
                    dtype_name(t.dtype), dtype_list(allowed));
}

Status check_rank(std::string_view op, std::string_view name, const TensorView& t, int rank) {
  if (t.shape.rank() != rank)
    return make_error(ErrorCode::kInvalidArgument, "{}: {} has rank {} (shape {}), expected rank {}",
                      op, name, t.shape.rank(), t.shape.to_string(), rank);
  return ok_status();
}

Status check_min_rank(std::string_view op, std::string_view name, const TensorView& t, int rank) {
  if (t.shape.rank() < rank)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: {} has rank {} (shape {}), expected rank {} or more", op, name,
                      t.shape.rank(), t.shape.to_string(), rank);
  return ok_status();
}

Status check_shape(std::string_view op, std::string_view name, const TensorView& t,
                   const Shape& expected) {
  if (t.shape != expected)
    return make_error(ErrorCode::kInvalidArgument, "{}: {} has shape {}, expected {}", op, name,
                      t.shape.to_string(), expected.to_string());
  return ok_status();
}

Status check_no_overlap(std::string_view op, std::string_view out_name, const TensorView& out,
                        std::string_view in_name, const TensorView& in, bool exact_alias_ok) {
  auto out_bytes = out.storage_bytes();
  auto in_bytes = in.storage_bytes();
  if (!out_bytes.ok() || !in_bytes.ok() || *out_bytes == 0 || *in_bytes == 0) return ok_status();
  const auto* o = static_cast<const uint8_t*>(out.data);
  const auto* i = static_cast<const uint8_t*>(in.data);
  const bool disjoint = o + *out_bytes <= i || i + *in_bytes <= o;
  if (disjoint) return ok_status();
  if (exact_alias_ok && o == i && *out_bytes == *in_bytes) return ok_status();
  return make_error(ErrorCode::kInvalidArgument, "{}: {} overlaps the storage of {}{}", op, out_name,
                    in_name, exact_alias_ok ? " without being the same tensor" : "");
}

Result<int> normalize_axis(std::string_view op, std::string_view attr, int64_t axis, int rank) {
  if (axis < -rank || axis >= rank)
    return make_error(ErrorCode::kOutOfRange, "{}: {} {} is outside [{}, {}) for rank {}", op, attr,
                      axis, -rank, rank, rank);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

Result<int64_t> int_attr_or(const KernelContext& ctx, const std::string& name, int64_t fallback) {
  if (!ctx.attrs.has(name)) return fallback;
  return ctx.attrs.get_int(name);
}

Result<bool> tokens_first_layout(std::string_view op, const runtime::AttrReader& attrs) {
  if (!attrs.has("layout")) return false;
  const Result<std::string> layout = attrs.get_string("layout");
  if (!layout.ok()) return layout.error();
  const std::string_view name = layout.value();
  if (name == "bthd") return true;
  if (name == "bhtd") return false;
  return make_error(ErrorCode::kInvalidArgument, "{}: layout '{}' is not one of 'bhtd', 'bthd'", op, name);
}

Result<std::string> string_attr_or(const KernelContext& ctx, const std::string& name,
                                   const std::string& fallback) {
  if (!ctx.attrs.has(name)) return fallback;
  return ctx.attrs.get_string(name);
}

Shape with_last_dim(const Shape& shape, int64_t last) {
  Shape out = shape;
  out[out.rank() - 1] = last;
  return out;
}

Shape without_last_dim(const Shape& shape) {
  return Shape(shape.dims().subspan(0, static_cast<size_t>(shape.rank() - 1)));
}

Result<Shape> with_appended_dim(std::string_view op, const Shape& shape, int64_t dim) {
  if (shape.rank() >= kMaxRank)
    return make_error(ErrorCode::kUnsupported, "{}: output would have rank {}, more than {}", op,
                      shape.rank() + 1, kMaxRank);
  // On the stack: kernels run these checks on every call, which must not allocate.
  std::array<int64_t, kMaxRank> dims{};
  std::copy(shape.dims().begin(), shape.dims().end(), dims.begin());
  dims[static_cast<size_t>(shape.rank())] = dim;
  return Shape(std::span<const int64_t>(dims.data(), static_cast<size_t>(shape.rank() + 1)));
}

int64_t dims_product(const Shape& shape, int begin, int end) {
  int64_t n = 1;
  for (int i = begin; i < end; ++i) n *= shape[i];
  return n;
}

}  // namespace kestrel::kernels::detail
