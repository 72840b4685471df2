// Appends tensors and ops to a QnnGraphPlan with unique, QNN-safe names, and maps payload
// values to their tensors. Used by the op lowerings.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/qnn/lowering/lowering.h"
#include "backends/qnn/qnn_op_def.h"

namespace kestrel::qnn::lowering {

using Dims = std::vector<uint32_t>;

class PlanBuilder {
 public:
  explicit PlanBuilder(QnnGraphPlan& plan) : plan_(plan) {}

  // A tensor of `type`; the name is made unique and safe ([A-Za-z0-9_]).
  QnnTensorId tensor(const std::string& name, QnnTensorType type, QnnDataType data_type, Dims dims,
                     std::span<const uint8_t> data = {});
  QnnTensorId native(const std::string& name, QnnDataType data_type, Dims dims) {
    return tensor(name, QnnTensorType::kNative, data_type, std::move(dims));
  }
  // A static tensor holding `values` (kept in the plan).
  QnnTensorId static_u32(const std::string& name, Dims dims, const std::vector<uint32_t>& values);
  QnnTensorId static_i32(const std::string& name, Dims dims, const std::vector<int32_t>& values);
  QnnTensorId static_f32(const std::string& name, Dims dims, const std::vector<float>& values);

  void op(const std::string& name, const char* type, std::vector<QnnTensorId> inputs,
          std::vector<QnnTensorId> outputs, std::vector<QnnParam> params = {});

  const QnnTensorSpec& spec(QnnTensorId id) const { return plan_.tensors.at(id); }
  const Dims& dims(QnnTensorId id) const { return spec(id).dims; }
  QnnDataType type(QnnTensorId id) const { return spec(id).data_type; }

  // Payload value -> tensor (set once, when the value's tensor is made).
  void bind(int32_t value_id, QnnTensorId tensor) { value_tensor_[value_id] = tensor; }
  bool bound(int32_t value_id) const { return value_tensor_.count(value_id) != 0; }
  QnnTensorId of(int32_t value_id) const { return value_tensor_.at(value_id); }

 private:
  std::string unique_name(const std::string& name);

  QnnGraphPlan& plan_;
  std::set<std::string> names_;
  std::set<std::string> op_names_;
  std::map<int32_t, QnnTensorId> value_tensor_;
};

// Parameter helpers.
inline QnnParam scalar_param(const char* name, QnnScalar value) { return QnnParam{name, value}; }
inline QnnParam tensor_param(const char* name, QnnTensorId tensor) { return QnnParam{name, tensor}; }

}  // namespace kestrel::qnn::lowering
