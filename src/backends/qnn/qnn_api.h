// The narrow interface through which the QNN delegate talks to QNN: contexts, graphs, tensors,
// nodes, finalize, execute, memory registration. Two implementations:
//   - the SDK adapter (sdk/qnn_sdk_api.cpp) over the QnnInterface_t of a QNN backend library
//     (libQnnHtp.so), built only with QNN_SDK_ROOT;
//   - the CPU stand-in (standin/), which checks and executes the same op graph on the host.
// The types mirror QnnTypes.h (enum values included) without including it, so everything above
// this line builds and is tested without the SDK.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::qnn {

// Qnn_DataType_t values.
enum class QnnDataType : uint32_t {
  kInt32 = 0x0032,
  kInt64 = 0x0064,
  kUInt8 = 0x0108,
  kUInt32 = 0x0132,
  kFloat16 = 0x0216,
  kFloat32 = 0x0232,
  kBool8 = 0x0508,
};
const char* qnn_data_type_name(QnnDataType type);  // "QNN_DATATYPE_FLOAT_32"
size_t qnn_data_type_size(QnnDataType type);
// Bytes of a tensor of `type` and `dims`.
uint64_t qnn_tensor_bytes(QnnDataType type, const std::vector<uint32_t>& dims);

// Qnn_TensorType_t values.
enum class QnnTensorType : uint32_t { kAppWrite = 0, kAppRead = 1, kNative = 3, kStatic = 4 };
const char* qnn_tensor_type_name(QnnTensorType type);

// Qnn_TensorMemType_t values: how an APP_WRITE/APP_READ tensor's memory arrives at execute.
enum class QnnMemType : uint32_t { kRaw = 0, kMemHandle = 1 };

// Ids the implementation assigns to graph tensors (Qnn_Tensor_t.v1.id).
using QnnTensorId = uint32_t;
// Opaque handles (Qnn_ContextHandle_t, Qnn_GraphHandle_t, Qnn_MemHandle_t).
using QnnContextHandle = void*;
using QnnGraphHandle = void*;
using QnnApiMemHandle = void*;

struct QnnTensorSpec {
  std::string name;  // unique in the graph
  QnnTensorType type = QnnTensorType::kNative;
  QnnDataType data_type = QnnDataType::kFloat32;
  std::vector<uint32_t> dims;
  // kStatic only: the bytes, valid until the graph is freed (views into the program's mapped
  // constants, or data the lowering made).
  std::span<const uint8_t> data;
  // APP_WRITE/APP_READ: how execute binds it (kMemHandle: only registered shared memory).
  QnnMemType mem_type = QnnMemType::kRaw;

  uint64_t bytes() const { return qnn_tensor_bytes(data_type, dims); }
};

// Qnn_Scalar_t.
struct QnnScalar {
  QnnDataType data_type = QnnDataType::kFloat32;
  union {
    float f32;
    uint32_t u32;
    int32_t i32;
    uint8_t bool8;
  };
  QnnScalar() : f32(0) {}
  static QnnScalar float32(float v);
  static QnnScalar uint32(uint32_t v);
  static QnnScalar int32(int32_t v);
  static QnnScalar boolean(bool v);
};

// Qnn_Param_t: a scalar, or a static tensor created in the same graph.
struct QnnParam {
  std::string name;
  std::variant<QnnScalar, QnnTensorId> value;
};

// Qnn_OpConfig_t (v1).
struct QnnOpSpec {
  std::string name;  // unique in the graph
  std::string package = "qti.aisw";
  std::string type;  // QnnOpDef.h name: "FullyConnected", "MatMul", ...
  std::vector<QnnParam> params;
  std::vector<QnnTensorId> inputs;
  std::vector<QnnTensorId> outputs;

  const QnnParam* param(std::string_view name) const;
};

// One APP_WRITE/APP_READ tensor at execute: a client buffer, or a registered memory handle
// (the memory the handle was registered for is what the graph reads or writes).
struct QnnTensorBinding {
  QnnTensorId tensor = 0;
  QnnMemType mem_type = QnnMemType::kRaw;
  void* data = nullptr;  // kRaw
  size_t bytes = 0;      // kRaw
  QnnApiMemHandle mem_handle = nullptr;  // kMemHandle
};

// What QnnMem_register gets for one tensor of a shared (rpcmem) buffer.
struct QnnMemDescriptor {
  int fd = -1;
  size_t offset = 0;      // of the tensor inside the buffer
  size_t total = 0;       // bytes of the whole buffer
  void* address = nullptr;  // the tensor's address in this process
  size_t bytes = 0;
  QnnDataType data_type = QnnDataType::kFloat32;
  std::vector<uint32_t> dims;
};

// Backend, device and graph settings from the compile specs.
struct QnnBackendConfig {
  std::string soc_model;
  int htp_arch = 0;
  int vtcm_mb = 0;
  std::string performance_mode;
  bool fp16 = true;  // graph precision
  int profile_level = 0;
  bool debug = false;
};

class QnnApi {
 public:
  virtual ~QnnApi() = default;
  // "stand-in" or the library it was opened from.
  virtual std::string describe() const = 0;

  virtual Result<QnnContextHandle> create_context(const QnnBackendConfig& config) = 0;
  virtual Status free_context(QnnContextHandle context) = 0;
  virtual Result<QnnGraphHandle> create_graph(QnnContextHandle context, const std::string& name,
                                              const QnnBackendConfig& config) = 0;
  virtual Result<QnnTensorId> create_tensor(QnnGraphHandle graph, const QnnTensorSpec& spec) = 0;
  virtual Status add_node(QnnGraphHandle graph, const QnnOpSpec& op) = 0;
  virtual Status finalize(QnnGraphHandle graph) = 0;
  // The graph's APP_READ tensors in the order this implementation enumerates them: the order
  // in which execute() takes its outputs.
  virtual Result<std::vector<QnnTensorId>> graph_outputs(QnnGraphHandle graph) = 0;
  virtual Status execute(QnnGraphHandle graph, std::span<const QnnTensorBinding> inputs,
                         std::span<const QnnTensorBinding> outputs) = 0;
  virtual Result<QnnApiMemHandle> register_memory(QnnContextHandle context, const QnnMemDescriptor& memory) = 0;
  virtual Status deregister_memory(QnnApiMemHandle handle) = 0;
};

}  // namespace kestrel::qnn
