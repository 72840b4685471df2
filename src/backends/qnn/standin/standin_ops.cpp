// The stand-in's QNN ops. Shapes, types and parameters follow the QNN op definitions; the math
// runs on the portable kernels where an op's semantics are a Kestrel kernel's (FullyConnected,
// MatMul, RmsNorm, LayerNorm, Softmax, Gelu, Transpose, same-shape or suffix-broadcast
// ElementWiseAdd/Multiply), and in plain loops here otherwise (numpy broadcasting, Select,
// comparisons, Gather, StridedSlice, Concat, ScatterNd, Cast, Sigmoid, Tanh).
#include "backends/qnn/standin/standin_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "backends/qnn/qnn_op_def.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::qnn::standin {

namespace {

using Dims = std::vector<uint32_t>;

uint64_t count(const Dims& dims) {
  uint64_t n = 1;
  for (uint32_t d : dims) n *= d;
  return n;
}

bool is_float(QnnDataType t) { return t == QnnDataType::kFloat32 || t == QnnDataType::kFloat16; }

std::string dims_text(const Dims& dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

// ---- element access ------------------------------------------------------------------------

double load(const Tensor& t, uint64_t i) {
  switch (t.spec.data_type) {
    case QnnDataType::kFloat32: return reinterpret_cast<const float*>(t.data)[i];
    case QnnDataType::kFloat16: return f16_to_f32(reinterpret_cast<const uint16_t*>(t.data)[i]);
    case QnnDataType::kInt32: return reinterpret_cast<const int32_t*>(t.data)[i];
    case QnnDataType::kUInt32: return reinterpret_cast<const uint32_t*>(t.data)[i];
    case QnnDataType::kInt64: return static_cast<double>(reinterpret_cast<const int64_t*>(t.data)[i]);
    case QnnDataType::kUInt8:
    case QnnDataType::kBool8: return t.data[i];
  }
  return 0;
}

void store(Tensor& t, uint64_t i, double v) {
  switch (t.spec.data_type) {
    case QnnDataType::kFloat32: reinterpret_cast<float*>(t.data)[i] = static_cast<float>(v); return;
    case QnnDataType::kFloat16: reinterpret_cast<uint16_t*>(t.data)[i] = f32_to_f16(static_cast<float>(v)); return;
    case QnnDataType::kInt32: reinterpret_cast<int32_t*>(t.data)[i] = static_cast<int32_t>(v); return;
    case QnnDataType::kUInt32: reinterpret_cast<uint32_t*>(t.data)[i] = static_cast<uint32_t>(v); return;
    case QnnDataType::kInt64: reinterpret_cast<int64_t*>(t.data)[i] = static_cast<int64_t>(v); return;
    case QnnDataType::kUInt8: t.data[i] = static_cast<uint8_t>(v); return;
    case QnnDataType::kBool8: t.data[i] = v != 0 ? 1 : 0; return;
  }
}

// ---- portable kernels ----------------------------------------------------------------------

DType kestrel_dtype(QnnDataType t) {
  switch (t) {
    case QnnDataType::kFloat32: return DType::kF32;
    case QnnDataType::kFloat16: return DType::kF16;
    case QnnDataType::kInt32:
    case QnnDataType::kUInt32: return DType::kI32;
    case QnnDataType::kInt64: return DType::kI64;
    case QnnDataType::kUInt8:
    case QnnDataType::kBool8: return DType::kU8;
  }
  return DType::kU8;
}

TensorView view(const Tensor& t, const Dims& dims) {
  std::vector<int64_t> shape(dims.begin(), dims.end());
  return TensorView::contiguous(kestrel_dtype(t.spec.data_type), Shape(std::span<const int64_t>(shape)), t.data);
}
TensorView view(const Tensor& t) { return view(t, t.spec.dims); }

Status run_portable(const OpArgs& args, const char* kernel_op, std::vector<TensorView> inputs,
                    std::vector<TensorView> outputs, const program::Attrs& attrs = {}) {
  auto kernel = kernels::portable_kernel_registry()->find(kernel_op);
  if (!kernel.ok()) return kernel.error();
  runtime::KernelContext ctx{kernel_op, inputs, outputs, runtime::AttrReader(kernel_op, attrs)};
  Status status = (*kernel)(ctx);
  if (!status.ok())
    return status.error().with_context(fmt::format("qnn stand-in: {} '{}'", args.op.type, args.op.name));
  return ok_status();
}

// An f32 copy of a float tensor (for portable kernels that take f32 only).
std::vector<float> as_f32(const Tensor& t) {
  std::vector<float> out(count(t.spec.dims));
  for (uint64_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(load(t, i));
  return out;
}

// ---- broadcasting --------------------------------------------------------------------------

Result<Dims> broadcast(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, 1);
  for (const Dims* s : shapes) {
    for (size_t i = 0; i < s->size(); ++i) {
      uint32_t& o = out[rank - s->size() + i];
      const uint32_t d = (*s)[i];
      if (o == 1) {
        o = d;
      } else if (d != 1 && d != o) {
        std::string all;
        for (const Dims* x : shapes) all += (all.empty() ? "" : " and ") + dims_text(*x);
        return make_error(ErrorCode::kInvalidArgument, "shapes {} do not broadcast", all);
      }
    }
  }
  return out;
}

// Visits every output element with the matching element index of each input.
template <size_t N, typename F>
void for_each_broadcast(const Dims& out, const std::array<const Dims*, N>& ins, F&& f) {
  const size_t rank = out.size();
  std::array<std::vector<uint64_t>, N> strides;
  for (size_t k = 0; k < N; ++k) {
    strides[k].assign(rank, 0);
    const Dims& d = *ins[k];
    uint64_t stride = 1;
    for (size_t i = d.size(); i-- > 0;) {
      if (d[i] != 1) strides[k][rank - d.size() + i] = stride;
      stride *= d[i];
    }
  }
  std::vector<uint32_t> coord(rank, 0);
  std::array<uint64_t, N> offset{};
  const uint64_t total = count(out);
  for (uint64_t flat = 0; flat < total; ++flat) {
    f(flat, offset);
    for (size_t i = rank; i-- > 0;) {
      ++coord[i];
      for (size_t k = 0; k < N; ++k) offset[k] += strides[k][i];
      if (coord[i] < out[i]) break;
      for (size_t k = 0; k < N; ++k) offset[k] -= strides[k][i] * out[i];
      coord[i] = 0;
    }
  }
}

// ---- checks shared by several ops ----------------------------------------------------------

Status same_shape_as_input(const OpArgs& a) {
  return a.expect_output(0, a.in[0]->spec.dims, a.in[0]->spec.data_type);
}

Status float_input(const OpArgs& a, size_t i) {
  if (!is_float(a.in[i]->spec.data_type))
    return a.fail("in[{}] is {}, expected a float type", i, qnn_data_type_name(a.in[i]->spec.data_type));
  return ok_status();
}

Status f32_only(const OpArgs& a, size_t i) {
  if (a.in[i]->spec.data_type != QnnDataType::kFloat32)
    return a.fail("in[{}] is {}; the stand-in runs this op on QNN_DATATYPE_FLOAT_32 activations only", i,
                  qnn_data_type_name(a.in[i]->spec.data_type));
  return ok_status();
}

// ---- element-wise --------------------------------------------------------------------------

Status check_binary(const OpArgs& a) {
  if (a.in[0]->spec.data_type != a.in[1]->spec.data_type)
    return a.fail("in[0] is {} but in[1] is {}", qnn_data_type_name(a.in[0]->spec.data_type),
                  qnn_data_type_name(a.in[1]->spec.data_type));
  auto dims = broadcast({&a.in[0]->spec.dims, &a.in[1]->spec.dims});
  if (!dims.ok()) return a.fail("{}", dims.error().message());
  return a.expect_output(0, *dims, a.in[0]->spec.data_type);
}

Status check_compare(const OpArgs& a) {
  if (a.in[0]->spec.data_type != a.in[1]->spec.data_type)
    return a.fail("in[0] is {} but in[1] is {}", qnn_data_type_name(a.in[0]->spec.data_type),
                  qnn_data_type_name(a.in[1]->spec.data_type));
  auto dims = broadcast({&a.in[0]->spec.dims, &a.in[1]->spec.dims});
  if (!dims.ok()) return a.fail("{}", dims.error().message());
  return a.expect_output(0, *dims, QnnDataType::kBool8);
}

template <typename F>
Status run_binary_loop(OpArgs& a, F&& f) {
  Tensor& out = *a.out[0];
  const Tensor& x = *a.in[0];
  const Tensor& y = *a.in[1];
  for_each_broadcast<2>(out.spec.dims, {&x.spec.dims, &y.spec.dims}, [&](uint64_t i, const std::array<uint64_t, 2>& at) {
    store(out, i, f(load(x, at[0]), load(y, at[1])));
  });
  return ok_status();
}

// b's shape equals a's or a suffix of it: the portable kernels' broadcast.
bool portable_broadcast(const OpArgs& a) {
  const Dims& x = a.in[0]->spec.dims;
  const Dims& y = a.in[1]->spec.dims;
  if (a.out[0]->spec.dims != x || y.size() > x.size()) return false;
  if (a.in[0]->spec.data_type != QnnDataType::kFloat32) return false;
  return std::equal(y.begin(), y.end(), x.end() - static_cast<std::ptrdiff_t>(y.size()));
}

Status run_add(OpArgs& a) {
  if (portable_broadcast(a)) return run_portable(a, "add", {view(*a.in[0]), view(*a.in[1])}, {view(*a.out[0])});
  return run_binary_loop(a, [](double x, double y) { return x + y; });
}
Status run_multiply(OpArgs& a) {
  if (portable_broadcast(a)) return run_portable(a, "mul", {view(*a.in[0]), view(*a.in[1])}, {view(*a.out[0])});
  return run_binary_loop(a, [](double x, double y) { return x * y; });
}
Status run_subtract(OpArgs& a) {
  return run_binary_loop(a, [](double x, double y) { return x - y; });
}
Status run_less_equal(OpArgs& a) {
  return run_binary_loop(a, [](double x, double y) { return x <= y ? 1.0 : 0.0; });
}

Status check_select(const OpArgs& a) {
  if (a.in[0]->spec.data_type != QnnDataType::kBool8) return a.fail("in[0] (condition) must be QNN_DATATYPE_BOOL_8");
  if (a.in[1]->spec.data_type != a.in[2]->spec.data_type) return a.fail("in[1] and in[2] differ in type");
  auto dims = broadcast({&a.in[0]->spec.dims, &a.in[1]->spec.dims, &a.in[2]->spec.dims});
  if (!dims.ok()) return a.fail("{}", dims.error().message());
  return a.expect_output(0, *dims, a.in[1]->spec.data_type);
}

Status run_select(OpArgs& a) {
  Tensor& out = *a.out[0];
  const Tensor& c = *a.in[0];
  const Tensor& x = *a.in[1];
  const Tensor& y = *a.in[2];
  for_each_broadcast<3>(out.spec.dims, {&c.spec.dims, &x.spec.dims, &y.spec.dims},
                        [&](uint64_t i, const std::array<uint64_t, 3>& at) {
                          store(out, i, c.data[at[0]] ? load(x, at[1]) : load(y, at[2]));
                        });
  return ok_status();
}

Status check_unary_float(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(float_input(a, 0));
  return same_shape_as_input(a);
}

template <typename F>
Status run_unary(OpArgs& a, F&& f) {
  const uint64_t n = count(a.out[0]->spec.dims);
  for (uint64_t i = 0; i < n; ++i) store(*a.out[0], i, f(load(*a.in[0], i)));
  return ok_status();
}
Status run_sigmoid(OpArgs& a) {
  return run_unary(a, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
}
Status run_tanh(OpArgs& a) {
  return run_unary(a, [](double x) { return std::tanh(x); });
}

Status check_gelu(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(f32_only(a, 0));
  return same_shape_as_input(a);
}
Status run_gelu(OpArgs& a) {
  return run_portable(a, "gelu", {view(*a.in[0])}, {view(*a.out[0])}, {{"approximate", std::string("none")}});
}

Status check_cast(const OpArgs& a) { return a.expect_output(0, a.in[0]->spec.dims, a.out[0]->spec.data_type); }
Status run_cast(OpArgs& a) {
  return run_unary(a, [](double x) { return x; });
}

// ---- shape ops -----------------------------------------------------------------------------

Status check_reshape(const OpArgs& a) {
  if (count(a.out[0]->spec.dims) != count(a.in[0]->spec.dims))
    return a.fail("out[0] {} does not hold the {} elements of in[0] {}", dims_text(a.out[0]->spec.dims),
                  count(a.in[0]->spec.dims), dims_text(a.in[0]->spec.dims));
  return a.expect_output(0, a.out[0]->spec.dims, a.in[0]->spec.data_type);
}
Status run_reshape(OpArgs& a) {
  if (a.out[0]->data != a.in[0]->data) std::memmove(a.out[0]->data, a.in[0]->data, a.in[0]->spec.bytes());
  return ok_status();
}

Result<std::vector<uint32_t>> permutation(const OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(const Tensor* perm, a.tensor(op::kTransposePerm, QnnDataType::kUInt32));
  const size_t rank = a.in[0]->spec.dims.size();
  if (perm->spec.dims != Dims{static_cast<uint32_t>(rank)}) return a.fail("perm must be [{}]", rank);
  std::vector<uint32_t> values(rank);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    values[i] = static_cast<uint32_t>(load(*perm, i));
    if (values[i] >= rank || seen[values[i]]) return a.fail("perm is not a permutation of 0..{}", rank - 1);
    seen[values[i]] = true;
  }
  return values;
}

Status check_transpose(const OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(auto perm, permutation(a));
  Dims dims;
  for (uint32_t p : perm) dims.push_back(a.in[0]->spec.dims[p]);
  return a.expect_output(0, dims, a.in[0]->spec.data_type);
}
Status run_transpose(OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(auto perm, permutation(a));
  return run_portable(a, "transpose", {view(*a.in[0])}, {view(*a.out[0])},
                      {{"perm", std::vector<int64_t>(perm.begin(), perm.end())}});
}

Status check_concat(const OpArgs& a) {
  const Dims& first = a.in[0]->spec.dims;
  KESTREL_ASSIGN_OR_RETURN(uint32_t axis, a.u32(op::kConcatAxis));
  if (axis >= first.size()) return a.fail("axis {} is outside rank {}", axis, first.size());
  Dims dims = first;
  dims[axis] = 0;
  for (size_t i = 0; i < a.in.size(); ++i) {
    const Dims& d = a.in[i]->spec.dims;
    if (a.in[i]->spec.data_type != a.in[0]->spec.data_type) return a.fail("in[{}] differs in type from in[0]", i);
    if (d.size() != first.size()) return a.fail("in[{}] has rank {}, in[0] {}", i, d.size(), first.size());
    for (size_t k = 0; k < d.size(); ++k)
      if (k != axis && d[k] != first[k]) return a.fail("in[{}] {} differs from in[0] {} off the axis", i, dims_text(d), dims_text(first));
    dims[axis] += d[axis];
  }
  return a.expect_output(0, dims, a.in[0]->spec.data_type);
}
Status run_concat(OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(uint32_t axis, a.u32(op::kConcatAxis));
  const Dims& out = a.out[0]->spec.dims;
  const size_t elem = qnn_data_type_size(a.out[0]->spec.data_type);
  uint64_t outer = 1;
  for (size_t k = 0; k < axis; ++k) outer *= out[k];
  uint8_t* dst = a.out[0]->data;
  for (uint64_t o = 0; o < outer; ++o) {
    for (const Tensor* in : a.in) {
      const uint64_t chunk = count(in->spec.dims) / outer * elem;
      std::memcpy(dst, in->data + o * chunk, chunk);
      dst += chunk;
    }
  }
  return ok_status();
}

// Resolved StridedSlice: per input axis begin, stride and size; shrunk axes dropped in `out`.
struct SliceRanges {
  std::vector<int64_t> begin, stride;
  Dims sizes, out;
};

Result<SliceRanges> slice_ranges(const OpArgs& a) {
  const Dims& dims = a.in[0]->spec.dims;
  const size_t rank = dims.size();
  KESTREL_ASSIGN_OR_RETURN(const Tensor* ranges, a.tensor(op::kStridedSliceRanges, QnnDataType::kInt32));
  if (ranges->spec.dims != Dims{static_cast<uint32_t>(rank), 3}) return a.fail("ranges must be [{}, 3]", rank);
  KESTREL_ASSIGN_OR_RETURN(uint32_t begin_mask, a.u32(op::kStridedSliceBeginMask, 0));
  KESTREL_ASSIGN_OR_RETURN(uint32_t end_mask, a.u32(op::kStridedSliceEndMask, 0));
  KESTREL_ASSIGN_OR_RETURN(uint32_t shrink, a.u32(op::kStridedSliceShrinkAxes, 0));
  KESTREL_ASSIGN_OR_RETURN(uint32_t new_axes, a.u32(op::kStridedSliceNewAxesMask, 0));
  if (new_axes != 0) return a.fail("new_axes_mask is not supported by the stand-in");
  SliceRanges r;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = dims[i];
    int64_t b = static_cast<int64_t>(load(*ranges, 3 * i));
    int64_t e = static_cast<int64_t>(load(*ranges, 3 * i + 1));
    const int64_t s = static_cast<int64_t>(load(*ranges, 3 * i + 2));
    if (s <= 0) return a.fail("axis {} has stride {}; the stand-in takes positive strides", i, s);
    if (begin_mask >> i & 1) b = 0;
    if (end_mask >> i & 1) e = d;
    if (b < 0) b += d;
    if (e < 0) e += d;
    b = std::clamp<int64_t>(b, 0, d);
    e = std::clamp<int64_t>(e, 0, d);
    const int64_t size = e > b ? (e - b + s - 1) / s : 0;
    if (size == 0) return a.fail("axis {} selects nothing", i);
    r.begin.push_back(b);
    r.stride.push_back(s);
    r.sizes.push_back(static_cast<uint32_t>(size));
    if (shrink >> i & 1) {
      if (size != 1) return a.fail("shrink_axes drops axis {} of size {}", i, size);
    } else {
      r.out.push_back(static_cast<uint32_t>(size));
    }
  }
  if (r.out.empty()) r.out.push_back(1);
  return r;
}

Status check_strided_slice(const OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(SliceRanges r, slice_ranges(a));
  return a.expect_output(0, r.out, a.in[0]->spec.data_type);
}
Status run_strided_slice(OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(SliceRanges r, slice_ranges(a));
  const Dims& dims = a.in[0]->spec.dims;
  const size_t rank = dims.size();
  const size_t elem = qnn_data_type_size(a.in[0]->spec.data_type);
  std::vector<uint64_t> strides(rank, 1);
  for (size_t i = rank - 1; i-- > 0;) strides[i] = strides[i + 1] * dims[i + 1];
  std::vector<uint32_t> coord(rank, 0);
  const uint64_t total = count(r.sizes);
  for (uint64_t flat = 0; flat < total; ++flat) {
    uint64_t src = 0;
    for (size_t i = 0; i < rank; ++i) src += static_cast<uint64_t>(r.begin[i] + coord[i] * r.stride[i]) * strides[i];
    std::memcpy(a.out[0]->data + flat * elem, a.in[0]->data + src * elem, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++coord[i] < r.sizes[i]) break;
      coord[i] = 0;
    }
  }
  return ok_status();
}

Status check_gather(const OpArgs& a) {
  const Dims& data = a.in[0]->spec.dims;
  const QnnDataType index_type = a.in[1]->spec.data_type;
  if (index_type != QnnDataType::kInt32 && index_type != QnnDataType::kUInt32)
    return a.fail("in[1] (indices) is {}, expected QNN_DATATYPE_INT_32 or UINT_32", qnn_data_type_name(index_type));
  KESTREL_ASSIGN_OR_RETURN(int32_t axis, a.i32(op::kGatherAxis, 0));
  if (axis < 0) axis += static_cast<int32_t>(data.size());
  if (axis < 0 || static_cast<size_t>(axis) >= data.size()) return a.fail("axis is outside rank {}", data.size());
  Dims dims(data.begin(), data.begin() + axis);
  dims.insert(dims.end(), a.in[1]->spec.dims.begin(), a.in[1]->spec.dims.end());
  dims.insert(dims.end(), data.begin() + axis + 1, data.end());
  return a.expect_output(0, dims, a.in[0]->spec.data_type);
}
Status run_gather(OpArgs& a) {
  const Dims& data = a.in[0]->spec.dims;
  KESTREL_ASSIGN_OR_RETURN(int32_t axis, a.i32(op::kGatherAxis, 0));
  if (axis < 0) axis += static_cast<int32_t>(data.size());
  uint64_t outer = 1, inner = qnn_data_type_size(a.in[0]->spec.data_type);
  for (int32_t k = 0; k < axis; ++k) outer *= data[k];
  for (size_t k = axis + 1; k < data.size(); ++k) inner *= data[k];
  const uint64_t n = count(a.in[1]->spec.dims);
  uint8_t* dst = a.out[0]->data;
  for (uint64_t o = 0; o < outer; ++o) {
    for (uint64_t j = 0; j < n; ++j) {
      const double index = load(*a.in[1], j);
      if (index < 0 || index >= data[axis])
        return a.fail("index {} (element {}) is outside [0, {})", index, j, data[axis]);
      std::memcpy(dst, a.in[0]->data + (o * data[axis] + static_cast<uint64_t>(index)) * inner, inner);
      dst += inner;
    }
  }
  return ok_status();
}

Status check_scatter_nd(const OpArgs& a) {
  const Dims& data = a.in[0]->spec.dims;
  const Dims& indices = a.in[1]->spec.dims;
  if (a.in[1]->spec.data_type != QnnDataType::kInt32) return a.fail("in[1] (indices) must be QNN_DATATYPE_INT_32");
  if (a.in[2]->spec.data_type != a.in[0]->spec.data_type) return a.fail("in[2] (updates) differs in type from in[0]");
  KESTREL_ASSIGN_OR_RETURN(uint32_t reduction, a.u32(op::kScatterNdReduction, 0));
  if (reduction != 0) return a.fail("reduction {} is not supported by the stand-in (only 0, none)", reduction);
  const size_t k = indices.back();
  if (k == 0 || k > data.size()) return a.fail("indices' last dim {} is outside [1, rank {}]", k, data.size());
  Dims updates(indices.begin(), indices.end() - 1);
  updates.insert(updates.end(), data.begin() + static_cast<std::ptrdiff_t>(k), data.end());
  if (a.in[2]->spec.dims != updates)
    return a.fail("in[2] (updates) is {}, indices {} and data {} need {}", dims_text(a.in[2]->spec.dims),
                  dims_text(indices), dims_text(data), dims_text(updates));
  return a.expect_output(0, data, a.in[0]->spec.data_type);
}
Status run_scatter_nd(OpArgs& a) {
  const Dims& data = a.in[0]->spec.dims;
  const Dims& indices = a.in[1]->spec.dims;
  const size_t k = indices.back();
  const size_t elem = qnn_data_type_size(a.in[0]->spec.data_type);
  uint64_t slice = elem;
  for (size_t i = k; i < data.size(); ++i) slice *= data[i];
  if (a.out[0]->data != a.in[0]->data) std::memcpy(a.out[0]->data, a.in[0]->data, a.in[0]->spec.bytes());
  const uint64_t tuples = count(indices) / k;
  for (uint64_t t = 0; t < tuples; ++t) {
    uint64_t offset = 0;
    for (size_t j = 0; j < k; ++j) {
      const double index = load(*a.in[1], t * k + j);
      if (index < 0 || index >= data[j])
        return a.fail("index tuple {} has {} on axis {}, outside [0, {})", t, index, j, data[j]);
      offset = offset * data[j] + static_cast<uint64_t>(index);
    }
    std::memcpy(a.out[0]->data + offset * slice, a.in[2]->data + t * slice, slice);
  }
  return ok_status();
}

// ---- linear algebra and normalization ------------------------------------------------------

Status check_fully_connected(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(f32_only(a, 0));
  const Dims& x = a.in[0]->spec.dims;
  const Dims& w = a.in[1]->spec.dims;
  if (x.size() < 2) return a.fail("in[0] must have rank >= 2");
  if (w.size() != 2 || w[1] != x.back())
    return a.fail("in[1] (weights) is {}, expected [N, {}]", dims_text(w), x.back());
  KESTREL_RETURN_IF_ERROR(float_input(a, 1));
  if (a.in.size() > 2 && a.in[2]->spec.dims != Dims{w[0]}) return a.fail("in[2] (bias) must be [{}]", w[0]);
  KESTREL_ASSIGN_OR_RETURN(bool keep_dims, a.boolean(op::kFullyConnectedKeepDims, false));
  Dims out;
  if (keep_dims) {
    out.assign(x.begin(), x.end() - 1);
  } else {
    out.push_back(static_cast<uint32_t>(count(x) / x.back()));
  }
  out.push_back(w[0]);
  return a.expect_output(0, out, QnnDataType::kFloat32);
}
Status run_fully_connected(OpArgs& a) {
  const Dims& x = a.in[0]->spec.dims;
  const uint32_t K = x.back(), N = a.in[1]->spec.dims[0];
  const auto M = static_cast<uint32_t>(count(x) / K);
  std::vector<TensorView> inputs{view(*a.in[0], {M, K}), view(*a.in[1])};
  std::vector<float> bias;
  if (a.in.size() > 2) {
    bias = as_f32(*a.in[2]);
    inputs.push_back(TensorView::contiguous(DType::kF32, Shape{N}, bias.data()));
  }
  return run_portable(a, "linear", std::move(inputs), {view(*a.out[0], {M, N})});
}

Status matmul_dims(const OpArgs& a, Dims& out, uint32_t& M, uint32_t& K, uint32_t& N) {
  const Dims& x = a.in[0]->spec.dims;
  const Dims& y = a.in[1]->spec.dims;
  KESTREL_ASSIGN_OR_RETURN(bool t0, a.boolean(op::kMatMulTransposeIn0, false));
  KESTREL_ASSIGN_OR_RETURN(bool t1, a.boolean(op::kMatMulTransposeIn1, false));
  if (x.size() < 2 || x.size() != y.size()) return a.fail("in[0] {} and in[1] {} need equal ranks >= 2", dims_text(x), dims_text(y));
  if (!std::equal(x.begin(), x.end() - 2, y.begin()))
    return a.fail("batch dims of {} and {} differ (the stand-in does not broadcast them)", dims_text(x), dims_text(y));
  const size_t r = x.size();
  M = t0 ? x[r - 1] : x[r - 2];
  K = t0 ? x[r - 2] : x[r - 1];
  const uint32_t K1 = t1 ? y[r - 1] : y[r - 2];
  N = t1 ? y[r - 2] : y[r - 1];
  if (K != K1) return a.fail("inner dims differ: {} and {}", K, K1);
  out.assign(x.begin(), x.end() - 2);
  out.push_back(M);
  out.push_back(N);
  return ok_status();
}

Status check_matmul(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(f32_only(a, 0));
  KESTREL_RETURN_IF_ERROR(f32_only(a, 1));
  Dims out;
  uint32_t M, K, N;
  KESTREL_RETURN_IF_ERROR(matmul_dims(a, out, M, K, N));
  return a.expect_output(0, out, QnnDataType::kFloat32);
}

// The last two axes swapped, as an f32 buffer.
std::vector<float> swap_last_two(const Tensor& t) {
  const Dims& d = t.spec.dims;
  const uint64_t rows = d[d.size() - 2], cols = d.back(), batch = count(d) / (rows * cols);
  const auto* src = reinterpret_cast<const float*>(t.data);
  std::vector<float> out(count(d));
  for (uint64_t b = 0; b < batch; ++b)
    for (uint64_t i = 0; i < rows; ++i)
      for (uint64_t j = 0; j < cols; ++j) out[(b * cols + j) * rows + i] = src[(b * rows + i) * cols + j];
  return out;
}

Status run_matmul(OpArgs& a) {
  Dims out;
  uint32_t M, K, N;
  KESTREL_RETURN_IF_ERROR(matmul_dims(a, out, M, K, N));
  KESTREL_ASSIGN_OR_RETURN(bool t0, a.boolean(op::kMatMulTransposeIn0, false));
  KESTREL_ASSIGN_OR_RETURN(bool t1, a.boolean(op::kMatMulTransposeIn1, false));
  Dims x_dims(out.begin(), out.end() - 2), y_dims = x_dims;
  x_dims.insert(x_dims.end(), {M, K});
  y_dims.insert(y_dims.end(), {K, N});
  std::vector<float> x_copy, y_copy;
  TensorView x = view(*a.in[0], x_dims), y = view(*a.in[1], y_dims);
  if (t0) {
    x_copy = swap_last_two(*a.in[0]);
    x.data = x_copy.data();
  }
  if (t1) {
    y_copy = swap_last_two(*a.in[1]);
    y.data = y_copy.data();
  }
  return run_portable(a, "matmul", {x, y}, {view(*a.out[0])});
}

Status check_norm(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(f32_only(a, 0));
  const Dims& x = a.in[0]->spec.dims;
  KESTREL_ASSIGN_OR_RETURN(const Tensor* axes, a.tensor(op::kNormAxes, QnnDataType::kUInt32));
  if (count(axes->spec.dims) != 1 || load(*axes, 0) != x.size() - 1)
    return a.fail("axes must be [{}] (the stand-in normalizes the last axis only)", x.size() - 1);
  KESTREL_RETURN_IF_ERROR(a.f32(op::kNormEpsilon, 1e-6f));
  for (size_t i = 1; i < a.in.size(); ++i) {
    KESTREL_RETURN_IF_ERROR(float_input(a, i));
    if (a.in[i]->spec.dims != Dims{x.back()}) return a.fail("in[{}] must be [{}]", i, x.back());
  }
  return same_shape_as_input(a);
}

Status run_rms_norm(OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(float eps, a.f32(op::kNormEpsilon, 1e-6f));
  KESTREL_RETURN_IF_ERROR(run_portable(a, "rms_norm", {view(*a.in[0]), view(*a.in[1])}, {view(*a.out[0])},
                                       {{"eps", static_cast<double>(eps)}}));
  if (a.in.size() > 2) {  // beta: added after the scale
    const uint64_t D = a.in[2]->spec.dims[0], n = count(a.out[0]->spec.dims);
    for (uint64_t i = 0; i < n; ++i) store(*a.out[0], i, load(*a.out[0], i) + load(*a.in[2], i % D));
  }
  return ok_status();
}

Status run_layer_norm(OpArgs& a) {
  KESTREL_ASSIGN_OR_RETURN(float eps, a.f32(op::kNormEpsilon, 1e-6f));
  std::vector<TensorView> inputs{view(*a.in[0]), view(*a.in[1])};
  if (a.in.size() > 2) inputs.push_back(view(*a.in[2]));
  return run_portable(a, "layer_norm", std::move(inputs), {view(*a.out[0])}, {{"eps", static_cast<double>(eps)}});
}

Status check_softmax(const OpArgs& a) {
  KESTREL_RETURN_IF_ERROR(f32_only(a, 0));
  const auto rank = static_cast<uint32_t>(a.in[0]->spec.dims.size());
  KESTREL_ASSIGN_OR_RETURN(uint32_t axis, a.u32(op::kSoftmaxAxis, rank - 1));
  if (axis >= rank) return a.fail("axis {} is outside rank {}", axis, rank);
  KESTREL_RETURN_IF_ERROR(a.f32(op::kSoftmaxBeta, 1.0f));
  return same_shape_as_input(a);
}
Status run_softmax(OpArgs& a) {
  const auto rank = static_cast<uint32_t>(a.in[0]->spec.dims.size());
  KESTREL_ASSIGN_OR_RETURN(uint32_t axis, a.u32(op::kSoftmaxAxis, rank - 1));
  KESTREL_ASSIGN_OR_RETURN(float beta, a.f32(op::kSoftmaxBeta, 1.0f));
  TensorView x = view(*a.in[0]);
  std::vector<float> scaled;
  if (beta != 1.0f) {
    scaled = as_f32(*a.in[0]);
    for (float& v : scaled) v *= beta;
    x.data = scaled.data();
  }
  return run_portable(a, "softmax", {x}, {view(*a.out[0])}, {{"axis", static_cast<int64_t>(axis)}});
}

const std::map<std::string, OpDef, std::less<>>& op_table() {
  static const std::map<std::string, OpDef, std::less<>> table{
      {op::kCast, {1, 1, check_cast, run_cast}},
      {op::kConcat, {1, 64, check_concat, run_concat}},
      {op::kElementWiseAdd, {2, 2, check_binary, run_add}},
      {op::kElementWiseLessEqual, {2, 2, check_compare, run_less_equal}},
      {op::kElementWiseMultiply, {2, 2, check_binary, run_multiply}},
      {op::kElementWiseSelect, {3, 3, check_select, run_select}},
      {op::kElementWiseSubtract, {2, 2, check_binary, run_subtract}},
      {op::kFullyConnected, {2, 3, check_fully_connected, run_fully_connected}},
      {op::kGather, {2, 2, check_gather, run_gather}},
      {op::kGelu, {1, 1, check_gelu, run_gelu}},
      {op::kLayerNorm, {2, 3, check_norm, run_layer_norm}},
      {op::kMatMul, {2, 2, check_matmul, run_matmul}},
      {op::kReshape, {1, 1, check_reshape, run_reshape}},
      {op::kRmsNorm, {2, 3, check_norm, run_rms_norm}},
      {op::kScatterNd, {3, 3, check_scatter_nd, run_scatter_nd}},
      {op::kSigmoid, {1, 1, check_unary_float, run_sigmoid}},
      {op::kSoftmax, {1, 1, check_softmax, run_softmax}},
      {op::kStridedSlice, {1, 1, check_strided_slice, run_strided_slice}},
      {op::kTanh, {1, 1, check_unary_float, run_tanh}},
      {op::kTranspose, {1, 1, check_transpose, run_transpose}},
  };
  return table;
}

}  // namespace

const OpDef* find_op(std::string_view type) {
  auto it = op_table().find(type);
  return it == op_table().end() ? nullptr : &it->second;
}

// ---- OpArgs --------------------------------------------------------------------------------

OpArgs::OpArgs(const QnnOpSpec& op_spec, std::vector<Tensor>& tensors) : op(op_spec), tensors_(tensors) {
  for (QnnTensorId id : op.inputs) in.push_back(&tensors_.at(id));
  for (QnnTensorId id : op.outputs) out.push_back(&tensors_.at(id));
}

const QnnParam* OpArgs::param(const char* name) const { return op.param(name); }

Result<QnnScalar> OpArgs::scalar(const char* name, QnnDataType type) const {
  const QnnParam* p = param(name);
  const auto* s = std::get_if<QnnScalar>(&p->value);
  if (s == nullptr) return fail("parameter '{}' must be a scalar", name);
  if (s->data_type != type)
    return fail("parameter '{}' is {}, expected {}", name, qnn_data_type_name(s->data_type), qnn_data_type_name(type));
  return *s;
}

template <typename T>
Result<T> OpArgs::scalar_or(const char* name, QnnDataType type, std::optional<T> fallback, T QnnScalar::*field) const {
  if (param(name) == nullptr) {
    if (fallback) return *fallback;
    return fail("parameter '{}' is missing", name);
  }
  KESTREL_ASSIGN_OR_RETURN(QnnScalar s, scalar(name, type));
  return s.*field;
}

Result<uint32_t> OpArgs::u32(const char* name, std::optional<uint32_t> fallback) const {
  return scalar_or(name, QnnDataType::kUInt32, fallback, &QnnScalar::u32);
}
Result<int32_t> OpArgs::i32(const char* name, std::optional<int32_t> fallback) const {
  return scalar_or(name, QnnDataType::kInt32, fallback, &QnnScalar::i32);
}
Result<float> OpArgs::f32(const char* name, std::optional<float> fallback) const {
  return scalar_or(name, QnnDataType::kFloat32, fallback, &QnnScalar::f32);
}
Result<bool> OpArgs::boolean(const char* name, std::optional<bool> fallback) const {
  auto value = scalar_or(name, QnnDataType::kBool8, fallback ? std::optional<uint8_t>(*fallback ? 1 : 0) : std::nullopt,
                         &QnnScalar::bool8);
  if (!value.ok()) return value.error();
  return *value != 0;
}

Result<const Tensor*> OpArgs::tensor(const char* name, QnnDataType type) const {
  const QnnParam* p = param(name);
  if (p == nullptr) return fail("parameter '{}' is missing", name);
  const auto* id = std::get_if<QnnTensorId>(&p->value);
  if (id == nullptr) return fail("parameter '{}' must be a tensor", name);
  if (*id >= tensors_.size()) return fail("parameter '{}' names tensor {}, which does not exist", name, *id);
  const Tensor& t = tensors_[*id];
  if (t.spec.type != QnnTensorType::kStatic) return fail("parameter '{}' must be a static tensor", name);
  if (t.spec.data_type != type)
    return fail("parameter '{}' is {}, expected {}", name, qnn_data_type_name(t.spec.data_type), qnn_data_type_name(type));
  return &t;
}

Status OpArgs::expect_output(size_t i, const std::vector<uint32_t>& dims, QnnDataType type) const {
  const QnnTensorSpec& spec = out.at(i)->spec;
  if (spec.dims != dims || spec.data_type != type)
    return fail("out[{}] '{}' is {} {}, but the op gives {} {}", i, spec.name, qnn_data_type_name(spec.data_type),
                dims_text(spec.dims), qnn_data_type_name(type), dims_text(dims));
  return ok_status();
}

}  // namespace kestrel::qnn::standin
