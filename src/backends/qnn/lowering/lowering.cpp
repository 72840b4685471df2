#include "backends/qnn/lowering/lowering.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>

#include "backends/qnn/lowering/node_lowering.h"

namespace kestrel::qnn {

using lowering::Dims;
using lowering::NodeLowering;
using lowering::PlanBuilder;

std::vector<std::string> QnnGraphPlan::op_types() const {
  std::set<std::string> types;
  for (const auto& op : ops) types.insert(op.type);
  return {types.begin(), types.end()};
}

Result<QnnDataType> qnn_data_type(DType dtype) {
  switch (dtype) {
    case DType::kF32: return QnnDataType::kFloat32;
    case DType::kF16: return QnnDataType::kFloat16;
    case DType::kI32: return QnnDataType::kInt32;
    case DType::kI64:
      return make_error(ErrorCode::kUnsupported,
                        "i64 has no QNN HTP tensor type (the narrow_index_inputs edge transform casts "
                        "integer inputs to i32)");
    default:
      return make_error(ErrorCode::kUnsupported, "{} has no QNN tensor type in this lowering", dtype_name(dtype));
  }
}

namespace {

Result<Dims> qnn_dims(const QnnPayloadValue& value) {
  Dims dims;
  for (int64_t d : value.shape) {
    if (d <= 0 || d > std::numeric_limits<uint32_t>::max())
      return make_error(ErrorCode::kUnsupported, "value {} ('{}') has dim {}, which QNN cannot express", value.id,
                        value.name, d);
    dims.push_back(static_cast<uint32_t>(d));
  }
  if (dims.empty()) dims.push_back(1);  // QNN has no rank-0 tensors
  return dims;
}

using LowerFn = Status (*)(NodeLowering&);

const std::map<std::string, LowerFn, std::less<>>& lowerings() {
  static const std::map<std::string, LowerFn, std::less<>> table{
      {"embedding", lowering::lower_embedding}, {"rms_norm", lowering::lower_rms_norm},
      {"layer_norm", lowering::lower_layer_norm}, {"linear", lowering::lower_linear},
      {"matmul", lowering::lower_matmul},       {"softmax", lowering::lower_softmax},
      {"silu", lowering::lower_silu},           {"gelu", lowering::lower_gelu},
      {"mul", lowering::lower_mul},             {"add", lowering::lower_add},
      {"reshape", lowering::lower_reshape},     {"transpose", lowering::lower_transpose},
      {"slice", lowering::lower_slice},         {"cast", lowering::lower_cast},
      {"rope", lowering::lower_rope},           {"attention", lowering::lower_attention},
      {"index_copy", lowering::lower_index_copy}};
  return table;
}

}  // namespace

Result<QnnGraphPlan> lower_to_qnn(const QnnPayload& payload, const ConstantBytes& constants) {
  QnnGraphPlan plan;
  PlanBuilder builder(plan);

  // Static tensors: embedded or referenced weights and tables; APP_WRITE: everything else the
  // delegate receives at execute.
  auto value_error = [](const QnnPayloadValue& value, const Error& error) {
    return error.with_context(fmt::format("qnn lowering: value {} ('{}')", value.id, value.name));
  };
  auto make_static = [&](const QnnPayloadValue& value) -> Status {
    auto type = qnn_data_type(value.dtype);
    if (!type.ok()) return value_error(value, type.error());
    auto dims = qnn_dims(value);
    if (!dims.ok()) return value_error(value, dims.error());
    auto bytes = constants(value);
    if (!bytes.ok()) return value_error(value, bytes.error());
    const uint64_t want = qnn_tensor_bytes(*type, *dims);
    if (bytes->size() != want)
      return make_error(ErrorCode::kInvalidArgument, "qnn lowering: value {} ('{}') has {} bytes, {} {} needs {}",
                        value.id, value.name, bytes->size(), qnn_data_type_name(*type), fmt::join(*dims, "x"),
                        want);
    builder.bind(value.id, builder.tensor(value.name, QnnTensorType::kStatic, *type, *dims, *bytes));
    return ok_status();
  };
  auto is_weight = [](const QnnPayloadValue& value) {
    return value.kind == QnnValueKind::kParameter || value.kind == QnnValueKind::kConstant;
  };

  plan.input_tensors.assign(payload.inputs.size(), -1);
  for (size_t i = 0; i < payload.inputs.size(); ++i) {
    const QnnPayloadValue& value = *payload.find_value(payload.inputs[i]);
    if (is_weight(value)) {
      KESTREL_RETURN_IF_ERROR(make_static(value));
      continue;
    }
    auto type = qnn_data_type(value.dtype);
    if (!type.ok()) return value_error(value, type.error());
    KESTREL_ASSIGN_OR_RETURN(Dims dims, qnn_dims(value));
    const QnnTensorId id = builder.tensor(value.name, QnnTensorType::kAppWrite, *type, std::move(dims));
    builder.bind(value.id, id);
    plan.input_tensors[i] = static_cast<int32_t>(id);
  }
  for (const QnnPayloadValue& value : payload.values)
    if (value.embedded && !builder.bound(value.id)) KESTREL_RETURN_IF_ERROR(make_static(value));

  for (const QnnPayloadNode& node : payload.nodes) {
    auto lower = lowerings().find(node.op);
    if (lower == lowerings().end())
      return make_error(ErrorCode::kUnsupported, "qnn lowering: node {} ({}): no QNN lowering for op '{}'", node.id,
                        node.op, node.op);
    for (int32_t id : node.outputs) {
      const QnnPayloadValue& value = *payload.find_value(id);
      auto type = qnn_data_type(value.dtype);
      if (!type.ok()) return value_error(value, type.error());
      KESTREL_ASSIGN_OR_RETURN(Dims dims, qnn_dims(value));
      const bool exported = value.output_index >= 0;
      builder.bind(id, builder.tensor(value.name, exported ? QnnTensorType::kAppRead : QnnTensorType::kNative, *type,
                                      std::move(dims)));
    }
    NodeLowering lowering(builder, payload, node);
    KESTREL_RETURN_IF_ERROR(lower->second(lowering));
  }
  for (int32_t id : payload.outputs) plan.output_tensors.push_back(static_cast<int32_t>(builder.of(id)));
  return plan;
}

namespace lowering {

// ---- attributes ----------------------------------------------------------------------------

Result<int64_t> NodeLowering::int_attr(const std::string& attr, std::optional<int64_t> fallback) const {
  auto it = node_.attrs.find(attr);
  if (it == node_.attrs.end()) {
    if (fallback) return *fallback;
    return fail("attribute '{}' is missing", attr);
  }
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return fail("attribute '{}' is not an int", attr);
}

Result<double> NodeLowering::float_attr(const std::string& attr, std::optional<double> fallback) const {
  auto it = node_.attrs.find(attr);
  if (it == node_.attrs.end()) {
    if (fallback) return *fallback;
    return fail("attribute '{}' is missing", attr);
  }
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return fail("attribute '{}' is not a float", attr);
}

Result<std::string> NodeLowering::string_attr(const std::string& attr, std::optional<std::string> fallback) const {
  auto it = node_.attrs.find(attr);
  if (it == node_.attrs.end()) {
    if (fallback) return *fallback;
    return fail("attribute '{}' is missing", attr);
  }
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  return fail("attribute '{}' is not a string", attr);
}

Result<std::vector<int64_t>> NodeLowering::ints_attr(const std::string& attr) const {
  auto it = node_.attrs.find(attr);
  if (it == node_.attrs.end()) return fail("attribute '{}' is missing", attr);
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  return fail("attribute '{}' is not an int list", attr);
}

// ---- shared pieces -------------------------------------------------------------------------

Result<Dims> broadcast_dims(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const uint32_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const uint32_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      return make_error(ErrorCode::kInvalidArgument, "shapes [{}] and [{}] do not broadcast", fmt::join(a, ", "),
                        fmt::join(b, ", "));
    out[i] = std::max(da, db);
  }
  return out;
}

QnnTensorId binary(NodeLowering& n, const std::string& what, const char* type, QnnTensorId a, QnnTensorId b) {
  auto dims = broadcast_dims(n.b.dims(a), n.b.dims(b));
  const QnnTensorId out = n.b.native(n.name(what), n.b.type(a), dims.ok() ? *dims : n.b.dims(a));
  n.op(what, type, {a, b}, {out});
  return out;
}

QnnTensorId slice_axis(NodeLowering& n, const std::string& what, QnnTensorId input, size_t axis, uint32_t begin,
                       uint32_t end) {
  Dims dims = n.b.dims(input);
  std::vector<int32_t> ranges;
  for (size_t i = 0; i < dims.size(); ++i) {
    const bool sliced = i == axis;
    ranges.insert(ranges.end(), {sliced ? static_cast<int32_t>(begin) : 0,
                                 sliced ? static_cast<int32_t>(end) : static_cast<int32_t>(dims[i]), 1});
  }
  dims[axis] = end - begin;
  const QnnTensorId out = n.b.native(n.name(what), n.b.type(input), dims);
  const QnnTensorId ranges_tensor =
      n.b.static_i32(n.name(what + "_ranges"), {static_cast<uint32_t>(n.b.dims(input).size()), 3}, ranges);
  n.op(what, op::kStridedSlice, {input}, {out}, {tensor_param(op::kStridedSliceRanges, ranges_tensor)});
  return out;
}

QnnTensorId reshape(NodeLowering& n, const std::string& what, QnnTensorId input, Dims dims) {
  const QnnTensorId out = n.b.native(n.name(what), n.b.type(input), std::move(dims));
  n.op(what, op::kReshape, {input}, {out});
  return out;
}

QnnTensorId cast_to(NodeLowering& n, const std::string& what, QnnTensorId input, QnnDataType type) {
  if (n.b.type(input) == type) return input;
  const QnnTensorId out = n.b.native(n.name(what), type, n.b.dims(input));
  n.op(what, op::kCast, {input}, {out});
  return out;
}

// ---- one QNN op each -----------------------------------------------------------------------

// Gather(table, ids; axis 0) -> ids.shape + [D]; an f16 table is cast to the f32 output.
Status lower_embedding(NodeLowering& n) {
  if (n.b.type(n.in(1)) != QnnDataType::kInt32) return n.fail("ids must be i32");
  const QnnTensorId table = n.in(0);
  const QnnTensorId out = n.out();
  const bool same = n.b.type(table) == n.b.type(out);
  const QnnTensorId gathered = same ? out : n.b.native(n.name("rows"), n.b.type(table), n.out_dims());
  n.op("gather", op::kGather, {table, n.in(1)}, {gathered}, {scalar_param(op::kGatherAxis, QnnScalar::int32(0))});
  if (!same) n.op("cast", op::kCast, {gathered}, {out});
  return ok_status();
}

Status lower_norm(NodeLowering& n, const char* type, size_t max_inputs) {
  KESTREL_ASSIGN_OR_RETURN(double eps, n.float_attr("eps", 1e-5));
  const auto rank = static_cast<uint32_t>(n.in_dims(0).size());
  const QnnTensorId axes = n.b.static_u32(n.name("axes"), {1}, {rank - 1});
  std::vector<QnnTensorId> inputs{n.in(0), n.in(1)};
  if (n.num_inputs() > 2 && max_inputs > 2) inputs.push_back(n.in(2));
  n.op("norm", type, std::move(inputs), {n.out()},
       {scalar_param(op::kNormEpsilon, QnnScalar::float32(static_cast<float>(eps))), tensor_param(op::kNormAxes, axes)});
  return ok_status();
}

// RmsNorm(x, gamma; epsilon, axes = [last]).
Status lower_rms_norm(NodeLowering& n) { return lower_norm(n, op::kRmsNorm, 2); }
// LayerNorm(x, gamma, beta; epsilon, axes = [last]).
Status lower_layer_norm(NodeLowering& n) { return lower_norm(n, op::kLayerNorm, 3); }

// FullyConnected(x [M, K], weights [N, K], bias [N]) with reshapes around it for rank > 2.
Status lower_linear(NodeLowering& n) {
  const Dims& x_dims = n.in_dims(0);
  const Dims& w_dims = n.in_dims(1);
  if (w_dims.size() != 2) return n.fail("weight must be [N, K]");
  const uint32_t K = x_dims.back(), N = w_dims[0];
  uint64_t M = 1;
  for (size_t i = 0; i + 1 < x_dims.size(); ++i) M *= x_dims[i];
  std::vector<QnnTensorId> inputs{x_dims.size() == 2 ? n.in(0) : reshape(n, "rows", n.in(0), {static_cast<uint32_t>(M), K}),
                                  n.in(1)};
  if (n.num_inputs() > 2) inputs.push_back(n.in(2));
  const bool flat = n.out_dims().size() == 2;
  const QnnTensorId y = flat ? n.out() : n.b.native(n.name("fc"), n.b.type(n.out()), {static_cast<uint32_t>(M), N});
  n.op("fc", op::kFullyConnected, std::move(inputs), {y},
       {scalar_param(op::kFullyConnectedKeepDims, QnnScalar::boolean(false))});
  if (!flat) n.op("unflatten", op::kReshape, {y}, {n.out()});
  return ok_status();
}

// MatMul(a, b; transpose_in0 = transpose_in1 = false).
Status lower_matmul(NodeLowering& n) {
  n.op("matmul", op::kMatMul, {n.in(0), n.in(1)}, {n.out()},
       {scalar_param(op::kMatMulTransposeIn0, QnnScalar::boolean(false)),
        scalar_param(op::kMatMulTransposeIn1, QnnScalar::boolean(false))});
  return ok_status();
}

// Softmax(x; axis, beta = 1).
Status lower_softmax(NodeLowering& n) {
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, n.int_attr("axis", -1));
  const auto rank = static_cast<int64_t>(n.in_dims(0).size());
  if (axis < -rank || axis >= rank) return n.fail("axis {} is outside rank {}", axis, rank);
  if (axis < 0) axis += rank;
  n.op("softmax", op::kSoftmax, {n.in(0)}, {n.out()},
       {scalar_param(op::kSoftmaxAxis, QnnScalar::uint32(static_cast<uint32_t>(axis))),
        scalar_param(op::kSoftmaxBeta, QnnScalar::float32(1.0f))});
  return ok_status();
}

// ElementWiseMultiply / ElementWiseAdd (Kestrel's suffix broadcast is numpy broadcast).
Status lower_mul(NodeLowering& n) {
  n.op("mul", op::kElementWiseMultiply, {n.in(0), n.in(1)}, {n.out()});
  return ok_status();
}
Status lower_add(NodeLowering& n) {
  n.op("add", op::kElementWiseAdd, {n.in(0), n.in(1)}, {n.out()});
  return ok_status();
}

// Reshape (the output tensor carries the shape).
Status lower_reshape(NodeLowering& n) {
  n.op("reshape", op::kReshape, {n.in(0)}, {n.out()});
  return ok_status();
}

// Transpose(x; perm).
Status lower_transpose(NodeLowering& n) {
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> perm, n.ints_attr("perm"));
  const size_t rank = n.in_dims(0).size();
  if (perm.size() != rank) return n.fail("perm has {} entries for rank {}", perm.size(), rank);
  std::vector<uint32_t> values;
  for (int64_t p : perm) {
    if (p < 0 || static_cast<size_t>(p) >= rank) return n.fail("perm entry {} is outside rank {}", p, rank);
    values.push_back(static_cast<uint32_t>(p));
  }
  const QnnTensorId perm_tensor = n.b.static_u32(n.name("perm"), {static_cast<uint32_t>(rank)}, values);
  n.op("transpose", op::kTranspose, {n.in(0)}, {n.out()}, {tensor_param(op::kTransposePerm, perm_tensor)});
  return ok_status();
}

// StridedSlice(x; ranges = [begin, end, 1] per axis).
Status lower_slice(NodeLowering& n) {
  const Dims& dims = n.in_dims(0);
  const auto rank = static_cast<int64_t>(dims.size());
  KESTREL_ASSIGN_OR_RETURN(int64_t axis, n.int_attr("axis"));
  KESTREL_ASSIGN_OR_RETURN(int64_t start, n.int_attr("start"));
  KESTREL_ASSIGN_OR_RETURN(int64_t end, n.int_attr("end"));
  if (axis < -rank || axis >= rank) return n.fail("axis {} is outside rank {}", axis, rank);
  if (axis < 0) axis += rank;
  const int64_t size = dims[axis];
  if (start < 0) start += size;
  if (end < 0) end += size;
  if (start < 0 || end > size || start >= end) return n.fail("range [{}, {}) is empty or outside [0, {})", start, end, size);
  std::vector<int32_t> ranges;
  for (int64_t i = 0; i < rank; ++i)
    ranges.insert(ranges.end(), {i == axis ? static_cast<int32_t>(start) : 0,
                                 i == axis ? static_cast<int32_t>(end) : static_cast<int32_t>(dims[i]), 1});
  const QnnTensorId ranges_tensor = n.b.static_i32(n.name("ranges"), {static_cast<uint32_t>(rank), 3}, ranges);
  n.op("slice", op::kStridedSlice, {n.in(0)}, {n.out()}, {tensor_param(op::kStridedSliceRanges, ranges_tensor)});
  return ok_status();
}

// Cast (the output tensor carries the type).
Status lower_cast(NodeLowering& n) {
  n.op("cast", op::kCast, {n.in(0)}, {n.out()});
  return ok_status();
}

}  // namespace lowering
}  // namespace kestrel::qnn
