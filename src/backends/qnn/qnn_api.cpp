#include "backends/qnn/qnn_api.h"

namespace kestrel::qnn {

const char* qnn_data_type_name(QnnDataType type) {
  switch (type) {
    case QnnDataType::kInt32: return "QNN_DATATYPE_INT_32";
    case QnnDataType::kInt64: return "QNN_DATATYPE_INT_64";
    case QnnDataType::kUInt8: return "QNN_DATATYPE_UINT_8";
    case QnnDataType::kUInt32: return "QNN_DATATYPE_UINT_32";
    case QnnDataType::kFloat16: return "QNN_DATATYPE_FLOAT_16";
    case QnnDataType::kFloat32: return "QNN_DATATYPE_FLOAT_32";
    case QnnDataType::kBool8: return "QNN_DATATYPE_BOOL_8";
  }
  return "QNN_DATATYPE_UNDEFINED";
}

size_t qnn_data_type_size(QnnDataType type) {
  switch (type) {
    case QnnDataType::kUInt8:
    case QnnDataType::kBool8: return 1;
    case QnnDataType::kFloat16: return 2;
    case QnnDataType::kInt32:
    case QnnDataType::kUInt32:
    case QnnDataType::kFloat32: return 4;
    case QnnDataType::kInt64: return 8;
  }
  return 0;
}

const char* qnn_tensor_type_name(QnnTensorType type) {
  switch (type) {
    case QnnTensorType::kAppWrite: return "APP_WRITE";
    case QnnTensorType::kAppRead: return "APP_READ";
    case QnnTensorType::kNative: return "NATIVE";
    case QnnTensorType::kStatic: return "STATIC";
  }
  return "UNDEFINED";
}

uint64_t qnn_tensor_bytes(QnnDataType type, const std::vector<uint32_t>& dims) {
  uint64_t n = qnn_data_type_size(type);
  for (uint32_t d : dims) n *= d;
  return n;
}

QnnScalar QnnScalar::float32(float v) {
  QnnScalar s;
  s.data_type = QnnDataType::kFloat32;
  s.f32 = v;
  return s;
}
QnnScalar QnnScalar::uint32(uint32_t v) {
  QnnScalar s;
  s.data_type = QnnDataType::kUInt32;
  s.u32 = v;
  return s;
}
QnnScalar QnnScalar::int32(int32_t v) {
  QnnScalar s;
  s.data_type = QnnDataType::kInt32;
  s.i32 = v;
  return s;
}
QnnScalar QnnScalar::boolean(bool v) {
  QnnScalar s;
  s.data_type = QnnDataType::kBool8;
  s.u32 = 0;
  s.bool8 = v ? 1 : 0;
  return s;
}

const QnnParam* QnnOpSpec::param(std::string_view param_name) const {
  for (const auto& p : params)
    if (p.name == param_name) return &p;
  return nullptr;
}

}  // namespace kestrel::qnn
