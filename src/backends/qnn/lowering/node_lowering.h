// What one Kestrel node's lowering sees: its input and output tensors, attributes, and a
// builder to append QNN tensors and ops.
#pragma once

#include <string>

#include "backends/qnn/lowering/plan_builder.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn::lowering {

class NodeLowering {
 public:
  NodeLowering(PlanBuilder& builder, const QnnPayload& payload, const QnnPayloadNode& node)
      : b(builder), payload_(payload), node_(node), prefix_(fmt::format("n{}_{}", node.id, node.op)) {}

  PlanBuilder& b;

  const QnnPayloadNode& node() const { return node_; }
  size_t num_inputs() const { return node_.inputs.size(); }
  QnnTensorId in(size_t i) const { return b.of(node_.inputs.at(i)); }
  QnnTensorId out(size_t i = 0) const { return b.of(node_.outputs.at(i)); }
  const QnnPayloadValue& in_value(size_t i) const { return *payload_.find_value(node_.inputs.at(i)); }
  const QnnPayloadValue& out_value(size_t i = 0) const { return *payload_.find_value(node_.outputs.at(i)); }
  const Dims& in_dims(size_t i) const { return b.dims(in(i)); }
  const Dims& out_dims(size_t i = 0) const { return b.dims(out(i)); }

  // A name for an op or tensor made for this node: "n<id>_<op>_<what>".
  std::string name(const std::string& what) const { return prefix_ + "_" + what; }
  // Appends an op named after this node.
  void op(const std::string& what, const char* type, std::vector<QnnTensorId> inputs,
          std::vector<QnnTensorId> outputs, std::vector<QnnParam> params = {}) {
    b.op(name(what), type, std::move(inputs), std::move(outputs), std::move(params));
  }

  // Attributes, with defaults; a mistyped attribute is an error.
  Result<int64_t> int_attr(const std::string& attr, std::optional<int64_t> fallback = std::nullopt) const;
  Result<double> float_attr(const std::string& attr, std::optional<double> fallback = std::nullopt) const;
  Result<std::string> string_attr(const std::string& attr, std::optional<std::string> fallback = std::nullopt) const;
  Result<std::vector<int64_t>> ints_attr(const std::string& attr) const;

  template <typename... Args>
  Error fail(fmt::format_string<Args...> format, Args&&... args) const {
    return make_error(ErrorCode::kUnsupported, "qnn lowering: node {} ({}): {}", node_.id, node_.op,
                      fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const QnnPayload& payload_;
  const QnnPayloadNode& node_;
  std::string prefix_;
};

// One lowering per Kestrel op; each writes the node's outputs (out(i)).
Status lower_embedding(NodeLowering& n);
Status lower_rms_norm(NodeLowering& n);
Status lower_layer_norm(NodeLowering& n);
Status lower_linear(NodeLowering& n);
Status lower_matmul(NodeLowering& n);
Status lower_softmax(NodeLowering& n);
Status lower_silu(NodeLowering& n);
Status lower_gelu(NodeLowering& n);
Status lower_mul(NodeLowering& n);
Status lower_add(NodeLowering& n);
Status lower_reshape(NodeLowering& n);
Status lower_transpose(NodeLowering& n);
Status lower_slice(NodeLowering& n);
Status lower_cast(NodeLowering& n);
// Decomposed: no single QNN op does these (lower_decomposed.cpp).
Status lower_rope(NodeLowering& n);
Status lower_attention(NodeLowering& n);
Status lower_index_copy(NodeLowering& n);

// Shared pieces.
// StridedSlice of `input` keeping [begin, end) on `axis` (everything else whole).
QnnTensorId slice_axis(NodeLowering& n, const std::string& what, QnnTensorId input, size_t axis, uint32_t begin,
                       uint32_t end);
// Reshape into a new native tensor of `dims`.
QnnTensorId reshape(NodeLowering& n, const std::string& what, QnnTensorId input, Dims dims);
// Cast into a new native tensor of `type` (returns input when it already is).
QnnTensorId cast_to(NodeLowering& n, const std::string& what, QnnTensorId input, QnnDataType type);
// A binary element-wise op into a new native tensor of the broadcast shape.
QnnTensorId binary(NodeLowering& n, const std::string& what, const char* type, QnnTensorId a, QnnTensorId b);
// Numpy broadcast of two shapes (error when they do not broadcast).
Result<Dims> broadcast_dims(const Dims& a, const Dims& b);

}  // namespace kestrel::qnn::lowering
