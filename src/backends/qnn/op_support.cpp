// The QNN HTP op-support table. Choices, in short:
// - Activations and weights must be f32 or f16. The delegate compiles with fp16 precision, so
//   f32 graph tensors run as fp16 on the HTP. bf16 has no HTP type, and Kestrel's block q8
//   (an f16 scale per 32 int8 values) is not a QNN quantization encoding: both stay portable.
// - Integer tensors appear only as index inputs (ids, positions, index_copy's index). QNN HTP
//   has no 64-bit integers: the lowering takes i32 indices only, and the narrow_index_inputs
//   edge transform, which runs before partitioning, casts the program's i64 token and position
//   inputs to i32 for every node this table accepts, so accepting i64 here means "after that
//   cast". No delegated op produces an integer tensor: argmax (i64 output) stays portable.
// - Shapes are static (every dim > 0) and of rank <= kQnnMaxRank.
#include "kestrel/backends/qnn/op_support.h"

#include <algorithm>
#include <array>

#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

constexpr std::array<QnnOpRule, 18> kRules{{
    {"embedding", "Gather(axis 0) [+ Cast for an f16 table]", "table f32/f16; ids i32 (i64 cast by narrow_index_inputs)",
     "q8 and bf16 tables stay portable"},
    {"rms_norm", "RmsNorm(epsilon, axes [last])", "x f32; weight f32/f16", "bf16 weight stays portable"},
    {"layer_norm", "LayerNorm(epsilon, axes [last])", "x f32; weight, bias f32/f16", "bf16 weight stays portable"},
    {"linear", "Reshape + FullyConnected(keep_dims false) + Reshape", "x f32; weight f32/f16 [N, K]; bias f32",
     "q8 and bf16 weights stay portable"},
    {"matmul", "MatMul(transpose_in0 false, transpose_in1 false)", "a, b f32", ""},
    {"rope",
     "Gather(cos, sin) + StridedSlice (halves) or Reshape + StridedSlice (pairs) + ElementWiseMultiply + "
     "ElementWiseSubtract + ElementWiseAdd + Concat",
     "x f32; positions i32 (i64 cast); cos, sin f32/f16", "style half or interleaved; partial rotary (rotary_dim) stays portable"},
    {"softmax", "Softmax(axis, beta 1)", "x f32", ""},
    {"attention",
     "ElementWiseMultiply(scale) + Reshape + MatMul(transpose_in1) + ElementWiseLessEqual(slots, positions) + "
     "ElementWiseSelect + Softmax + MatMul + Reshape",
     "q, k, v f32; positions i32 (i64 cast)", "Hq a multiple of Hkv; sliding window stays portable"},
    {"silu", "Sigmoid + ElementWiseMultiply", "x f32", ""},
    {"gelu", "Gelu (none); ElementWiseMultiply/Add + Tanh (tanh)", "x f32", ""},
    {"mul", "ElementWiseMultiply", "a, b f32", "suffix broadcast"},
    {"add", "ElementWiseAdd", "a, b f32", "suffix broadcast"},
    {"index_copy", "Reshape + ElementWiseAdd + Concat (indices) + ScatterNd(reduction none)",
     "dst, src f32 (same dtype); index i32 (i64 cast)",
     "writes a new output tensor; keep it portable with skip_node_op_set={index_copy} to update a cache in place"},
    {"reshape", "Reshape", "f32/f16", "integer reshapes stay portable"},
    {"transpose", "Transpose(perm)", "f32/f16", ""},
    {"slice", "StridedSlice(ranges)", "f32/f16", ""},
    {"cast", "Cast", "f32 <-> f16", "bf16 and integer casts stay portable"},
    {"argmax", "", "", "never delegated: i64 output"},
}};

bool is_htp_float(DType d) { return d == DType::kF32 || d == DType::kF16; }

// Which inputs of an op are integer indices.
bool is_index_input(const std::string& op, size_t input) {
  if (op == "embedding" || op == "rope" || op == "index_copy") return input == 1;
  if (op == "attention") return input == 3;
  return false;
}

size_t expected_inputs_min(const std::string& op) {
  if (op == "rope" || op == "attention") return 4;
  if (op == "index_copy") return 3;
  if (op == "embedding" || op == "rms_norm" || op == "layer_norm" || op == "linear" || op == "matmul" ||
      op == "mul" || op == "add") {
    return 2;
  }
  return 1;
}

Error unsupported(const exporter::Node& node, const std::string& why) {
  return make_error(ErrorCode::kUnsupported, "qnn: node {} ({}) stays portable: {}", node.id, node.op, why);
}

Status check_value(const exporter::Node& node, const exporter::Value& value, const char* role) {
  if (static_cast<int>(value.shape.size()) > kQnnMaxRank) {
    return unsupported(node, fmt::format("{} '{}' has rank {} (HTP takes at most {})", role, value.name,
                                         value.shape.size(), kQnnMaxRank));
  }
  for (int64_t d : value.shape) {
    if (d <= 0) {
      return unsupported(node, fmt::format("{} '{}' has a non-static or empty dim ({})", role,
                                           value.name, d));
    }
  }
  return ok_status();
}

const std::string* string_attr(const exporter::Node& node, const std::string& name) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end()) return nullptr;
  return std::get_if<std::string>(&it->second);
}

}  // namespace

std::span<const QnnOpRule> qnn_op_table() { return kRules; }

const QnnOpRule* find_qnn_op_rule(std::string_view op) {
  auto it = std::find_if(kRules.begin(), kRules.end(), [&](const QnnOpRule& r) { return r.op == op; });
  return it == kRules.end() ? nullptr : &*it;
}

bool is_qnn_index_input(const std::string& op, size_t input) { return is_index_input(op, input); }

namespace {

// Weights (parameters and constants) may be f16; activations are f32 (the stand-in and the
// portable semantics the lowering follows compute in f32; the HTP runs them in fp16).
bool is_weight(const exporter::Value& v) {
  return v.input_kind == exporter::InputKind::kParameter || v.input_kind == exporter::InputKind::kConstant;
}

int64_t int_attr_or(const exporter::Node& node, const std::string& name, int64_t fallback) {
  auto it = node.attrs.find(name);
  if (it == node.attrs.end()) return fallback;
  const auto* v = std::get_if<int64_t>(&it->second);
  return v ? *v : INT64_MIN;
}

}  // namespace

Status check_qnn_node(const exporter::Graph& graph, const exporter::Node& node) {
  const QnnOpRule* rule = find_qnn_op_rule(node.op);
  if (rule == nullptr) return unsupported(node, "op is not in the QNN HTP op table");
  if (rule->qnn_ops.empty()) return unsupported(node, std::string(rule->notes));
  if (node.op == "cast" && !node.inputs.empty() && node.inputs[0] >= 0 &&
      node.inputs[0] < static_cast<exporter::ValueId>(graph.values().size()) &&
      graph.value(node.inputs[0]).dtype == DType::kI64)
    return unsupported(node, "QNN HTP has no 64-bit integers: this i64 -> i32 cast runs on the CPU");
  if (node.inputs.size() < expected_inputs_min(node.op)) {
    return unsupported(node, fmt::format("expected at least {} inputs, got {}",
                                         expected_inputs_min(node.op), node.inputs.size()));
  }
  const auto num_values = static_cast<exporter::ValueId>(graph.values().size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const exporter::ValueId id = node.inputs[i];
    if (id < 0 || id >= num_values) return unsupported(node, fmt::format("input {} is not a value", i));
    const exporter::Value& v = graph.value(id);
    KESTREL_RETURN_IF_ERROR(check_value(node, v, "input"));
    if (is_index_input(node.op, i)) {
      if (v.dtype != DType::kI32 && v.dtype != DType::kI64) {
        return unsupported(node, fmt::format("index input '{}' is {}, expected i32 or i64 (cast to i32 by the "
                                             "narrow_index_inputs edge transform)",
                                             v.name, dtype_name(v.dtype)));
      }
    } else if (!is_htp_float(v.dtype)) {
      return unsupported(node, fmt::format("input '{}' is {} (HTP takes f32/f16 here)", v.name,
                                           dtype_name(v.dtype)));
    } else if (v.dtype == DType::kF16 && !is_weight(v) && node.op != "cast" && node.op != "reshape" &&
               node.op != "transpose" && node.op != "slice") {
      return unsupported(node, fmt::format("activation '{}' is f16 (the lowering computes f32 activations)", v.name));
    }
  }
  for (exporter::ValueId id : node.outputs) {
    if (id < 0 || id >= num_values) return unsupported(node, "an output is not a value");
    const exporter::Value& v = graph.value(id);
    KESTREL_RETURN_IF_ERROR(check_value(node, v, "output"));
    if (!is_htp_float(v.dtype)) {
      return unsupported(node, fmt::format("output '{}' is {} (HTP outputs f32/f16 here)", v.name,
                                           dtype_name(v.dtype)));
    }
    if (v.dtype == DType::kF16 && node.op != "cast" && node.op != "reshape" && node.op != "transpose" &&
        node.op != "slice") {
      return unsupported(node, fmt::format("output '{}' is f16 (the lowering computes f32 activations)", v.name));
    }
  }

  auto in = [&](size_t i) -> const exporter::Value& { return graph.value(node.inputs[i]); };
  if (node.op == "rope" || node.op == "attention") {
    // The lowering reads q (and rope's x) as [B, H, T, Dh]; the CPU-only tokens-first layout
    // (fold_head_transposes) is not lowered.
    const std::string* layout = string_attr(node, "layout");
    if (layout != nullptr && *layout != "bhtd") return unsupported(node, fmt::format("layout '{}'", *layout));
  }
  if (node.op == "transpose" && !node.inputs.empty() && !node.outputs.empty() &&
      in(0).dtype != graph.value(node.outputs[0]).dtype) {
    // The CPU's converting transpose (fold_head_transposes) is not lowered.
    return unsupported(node, fmt::format("a transpose from {} to {}", dtype_name(in(0).dtype),
                                         dtype_name(graph.value(node.outputs[0]).dtype)));
  }
  if (node.op == "rope") {
    const std::string* style = string_attr(node, "style");
    const std::string s = style ? *style : "half";
    if (s != "half" && s != "interleaved") return unsupported(node, fmt::format("rope style '{}'", s));
    // Partial rotary is not lowered: keep it portable.
    const auto& x = in(0);
    if (x.shape.size() != 4 || x.shape[3] % 2 != 0) return unsupported(node, "x must be [B, H, T, Dh] with an even Dh");
    if (int_attr_or(node, "rotary_dim", x.shape[3]) != x.shape[3]) return unsupported(node, "partial rotary (rotary_dim)");
  } else if (node.op == "gelu") {
    const std::string* approximate = string_attr(node, "approximate");
    if (approximate && *approximate != "none" && *approximate != "tanh") {
      return unsupported(node, fmt::format("gelu approximate '{}'", *approximate));
    }
  } else if (node.op == "attention") {
    const auto& q = in(0);
    const auto& k = in(1);
    if (q.shape.size() != 4 || k.shape.size() != 4 || in(2).shape.size() != 4) {
      return unsupported(node, "q, k and v must be rank 4 [B, H, T, Dh]");
    }
    if (k.shape[1] == 0 || q.shape[1] % k.shape[1] != 0) {
      return unsupported(node, fmt::format("Hq {} is not a multiple of Hkv {}", q.shape[1], k.shape[1]));
    }
    // The sliding-window mask is not lowered: keep windowed attention portable.
    if (int_attr_or(node, "window", 0) != 0) return unsupported(node, "sliding window");
  } else if (node.op == "index_copy") {
    if (in(0).dtype != in(2).dtype) {
      return unsupported(node, fmt::format("dst is {} but src is {}", dtype_name(in(0).dtype),
                                           dtype_name(in(2).dtype)));
    }
  } else if (node.op == "cast") {
    const std::string* dtype = string_attr(node, "dtype");
    if (dtype == nullptr || (*dtype != "f32" && *dtype != "f16")) {
      return unsupported(node, "cast target must be f32 or f16");
    }
  }
  if (node.op == "linear" && node.inputs.size() > 2 && in(2).dtype != DType::kF32) {
    return unsupported(node, fmt::format("bias '{}' is {} (f32 expected)", in(2).name, dtype_name(in(2).dtype)));
  }
  return ok_status();
}

}  // namespace kestrel::qnn
