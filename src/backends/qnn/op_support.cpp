// The QNN HTP op-support table. Choices, in short:
// - Activations and weights must be f32 or f16. The delegate compiles with fp16 precision, so
//   f32 graph tensors run as fp16 on the HTP. bf16 has no HTP type, and Kestrel's block q8
//   (an f16 scale per 32 int8 values) is not a QNN quantization encoding: both stay portable.
// - Integer tensors appear only as index inputs (ids, positions, index_copy's index), i32 or
//   i64, coming from outside the partition; the delegate narrows i64 to the i32 the HTP uses at
//   the graph boundary. No delegated op produces an integer tensor: argmax (i64 output; QNN's
//   Argmax yields 32-bit indices) stays portable, as does anything consuming or producing i64
//   data other than as an index.
// - Shapes are static (every dim > 0) and of rank <= kQnnMaxRank.
#include "kestrel/backends/qnn/op_support.h"

#include <algorithm>
#include <array>

#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

constexpr std::array<QnnOpRule, 18> kRules{{
    {"embedding", "Gather", "table f32/f16; ids i32/i64", "q8 and bf16 tables stay portable"},
    {"rms_norm", "RmsNorm", "x, weight f32/f16", "bf16 weight stays portable"},
    {"layer_norm", "LayerNorm", "x, weight, bias f32/f16", "bf16 weight stays portable"},
    {"linear", "FullyConnected", "x f32/f16; weight f32/f16 [N, K]; bias f32/f16",
     "q8 and bf16 weights stay portable"},
    {"matmul", "MatMul", "a, b f32/f16", ""},
    {"rope", "Gather + ElementWiseMultiply + ElementWiseAdd + Concat", "x f32/f16; positions i32/i64; cos, sin f32/f16",
     "style half or interleaved; partial rotary (rotary_dim) stays portable"},
    {"softmax", "Softmax", "x f32/f16", ""},
    {"attention", "MatMul + ElementWiseMultiply + mask (ElementWiseLessEqual, ElementWiseSelect) + Softmax + MatMul",
     "q, k, v f32/f16; positions i32/i64", "Hq must be a multiple of Hkv (grouped-query heads repeat); a sliding window stays portable"},
    {"silu", "ElementWiseNeuron(Sigmoid) + ElementWiseMultiply", "x f32/f16", ""},
    {"gelu", "Gelu (none) / Tanh-based decomposition (tanh)", "x f32/f16", ""},
    {"mul", "ElementWiseMultiply", "a, b f32/f16", "suffix broadcast"},
    {"add", "ElementWiseAdd", "a, b f32/f16", "suffix broadcast"},
    {"index_copy", "ScatterNd", "dst, src f32/f16 (same dtype); index i32/i64",
     "writes a new output tensor; keep it portable with skip_node_op_set={index_copy} to update a cache in place"},
    {"reshape", "Reshape", "f32/f16", "integer reshapes stay portable"},
    {"transpose", "Transpose", "f32/f16", ""},
    {"slice", "StridedSlice", "f32/f16", ""},
    {"cast", "Cast", "f32 <-> f16", "bf16 casts stay portable"},
    {"argmax", "", "", "never delegated: i64 output (QNN Argmax yields 32-bit indices)"},
}};

bool is_htp_float(DType d) { return d == DType::kF32 || d == DType::kF16; }
bool is_index(DType d) { return d == DType::kI32 || d == DType::kI64; }

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

Status check_qnn_node(const exporter::Graph& graph, const exporter::Node& node) {
  const QnnOpRule* rule = find_qnn_op_rule(node.op);
  if (rule == nullptr) return unsupported(node, "op is not in the QNN HTP op table");
  if (rule->qnn_ops.empty()) return unsupported(node, std::string(rule->notes));
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
      if (!is_index(v.dtype)) {
        return unsupported(node, fmt::format("index input '{}' is {}, expected i32 or i64", v.name,
                                             dtype_name(v.dtype)));
      }
    } else if (!is_htp_float(v.dtype)) {
      return unsupported(node, fmt::format("input '{}' is {} (HTP takes f32/f16 here)", v.name,
                                           dtype_name(v.dtype)));
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
  }

  auto in = [&](size_t i) -> const exporter::Value& { return graph.value(node.inputs[i]); };
  if (node.op == "rope") {
    const std::string* style = string_attr(node, "style");
    const std::string s = style ? *style : "half";
    if (s != "half" && s != "interleaved") return unsupported(node, fmt::format("rope style '{}'", s));
    // Partial rotary (rotary_dim < head_dim) is not in the QNN lowering: keep it portable.
    if (auto it = node.attrs.find("rotary_dim"); it != node.attrs.end()) {
      const auto* dims = std::get_if<int64_t>(&it->second);
      if (dims == nullptr || in(0).shape.size() != 4 || *dims != in(0).shape[3])
        return unsupported(node, "partial rotary (rotary_dim)");
    }
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
    // The sliding-window mask is not in the QNN lowering: keep windowed attention portable.
    if (auto it = node.attrs.find("window"); it != node.attrs.end()) {
      const auto* window = std::get_if<int64_t>(&it->second);
      if (window == nullptr || *window != 0) return unsupported(node, "sliding window");
    }
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
  return ok_status();
}

}  // namespace kestrel::qnn
