#include "backends/qnn/lowering/plan_builder.h"

#include <cctype>
#include <cstring>

namespace kestrel::qnn::lowering {

std::string PlanBuilder::unique_name(const std::string& name) {
  std::string safe;
  for (char c : name) safe += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (safe.empty() || std::isdigit(static_cast<unsigned char>(safe[0]))) safe = "t_" + safe;
  std::string candidate = safe;
  for (int n = 1; names_.count(candidate); ++n) candidate = safe + "_" + std::to_string(n);
  names_.insert(candidate);
  return candidate;
}

QnnTensorId PlanBuilder::tensor(const std::string& name, QnnTensorType type, QnnDataType data_type, Dims dims,
                                std::span<const uint8_t> data) {
  QnnTensorSpec spec;
  spec.name = unique_name(name);
  spec.type = type;
  spec.data_type = data_type;
  spec.dims = std::move(dims);
  spec.data = data;
  plan_.tensors.push_back(std::move(spec));
  return static_cast<QnnTensorId>(plan_.tensors.size() - 1);
}

template <typename T>
static std::span<const uint8_t> keep(QnnGraphPlan& plan, const std::vector<T>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  if (!bytes.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
  plan.owned.push_back(std::move(bytes));
  return plan.owned.back();
}

QnnTensorId PlanBuilder::static_u32(const std::string& name, Dims dims, const std::vector<uint32_t>& values) {
  return tensor(name, QnnTensorType::kStatic, QnnDataType::kUInt32, std::move(dims), keep(plan_, values));
}
QnnTensorId PlanBuilder::static_i32(const std::string& name, Dims dims, const std::vector<int32_t>& values) {
  return tensor(name, QnnTensorType::kStatic, QnnDataType::kInt32, std::move(dims), keep(plan_, values));
}
QnnTensorId PlanBuilder::static_f32(const std::string& name, Dims dims, const std::vector<float>& values) {
  return tensor(name, QnnTensorType::kStatic, QnnDataType::kFloat32, std::move(dims), keep(plan_, values));
}

void PlanBuilder::op(const std::string& name, const char* type, std::vector<QnnTensorId> inputs,
                     std::vector<QnnTensorId> outputs, std::vector<QnnParam> params) {
  QnnOpSpec spec;
  spec.name = name;
  for (int n = 1; op_names_.count(spec.name); ++n) spec.name = name + "_" + std::to_string(n);
  op_names_.insert(spec.name);
  spec.package = op::kPackage;
  spec.type = type;
  spec.inputs = std::move(inputs);
  spec.outputs = std::move(outputs);
  spec.params = std::move(params);
  plan_.ops.push_back(std::move(spec));
}

}  // namespace kestrel::qnn::lowering
