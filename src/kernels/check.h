// Validation shared by the portable kernels. Every message starts with the op and names the
// offending input or output, e.g. "linear: weight has dtype i32, expected one of f32, f16".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::kernels::detail {

using runtime::KernelContext;

// Input count in [min_inputs, max_inputs] and exactly `outputs` outputs.
Status check_arity(std::string_view op, const KernelContext& ctx, size_t min_inputs,
                   size_t max_inputs, size_t outputs);

// Usable as a contiguous tensor: row-major strides, data present when non-empty, q8 rows made
// of whole blocks.
Status check_tensor(std::string_view op, std::string_view name, const TensorView& t);

Status check_dtype(std::string_view op, std::string_view name, const TensorView& t,
                   std::initializer_list<DType> allowed);
Status check_rank(std::string_view op, std::string_view name, const TensorView& t, int rank);
Status check_min_rank(std::string_view op, std::string_view name, const TensorView& t, int rank);
Status check_shape(std::string_view op, std::string_view name, const TensorView& t,
                   const Shape& expected);

// Kernels that read an input after writing the output need disjoint storage. Where a kernel
// is written so that an output may be the very same tensor as an input (in place), pass
// exact_alias_ok: only partial overlap is then refused.
Status check_no_overlap(std::string_view op, std::string_view out_name, const TensorView& out,
                        std::string_view in_name, const TensorView& in, bool exact_alias_ok);

// Checks a (possibly negative) axis attribute against `rank` and returns it in [0, rank).
Result<int> normalize_axis(std::string_view op, std::string_view attr, int64_t axis, int rank);

// Attribute with a default: absent gives the fallback, present but mistyped is an error.
Result<int64_t> int_attr_or(const KernelContext& ctx, const std::string& name, int64_t fallback);
Result<std::string> string_attr_or(const KernelContext& ctx, const std::string& name,
                                   const std::string& fallback);

// The `layout` attribute of rope and attention (docs/ops.md): "bhtd" (absent: the default)
// gives false, "bthd" (tokens before heads: the linears' own layout, no transpose) true.
Result<bool> tokens_first_layout(std::string_view op, const runtime::AttrReader& attrs);

// Shape helpers for "[..., K] -> [..., N]" style output shapes.
Shape with_last_dim(const Shape& shape, int64_t last);
Shape without_last_dim(const Shape& shape);
Result<Shape> with_appended_dim(std::string_view op, const Shape& shape, int64_t dim);

// Product of dims [begin, end).
int64_t dims_product(const Shape& shape, int begin, int end);

}  // namespace kestrel::kernels::detail
