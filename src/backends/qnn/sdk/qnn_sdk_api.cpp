// The SDK adapter: QnnApi calls turned into QNN API calls, nothing more. Tensors are created
// with QnnTensor_createGraphTensor (QNN assigns ids), ops added with QnnGraph_addNode as
// Qnn_OpConfig_t v1, executed with QnnGraph_execute, and shared buffers registered with
// QnnMem_register (HTP custom shared buffer fd + offset where the HTP API has it, ION fd
// otherwise).
#include "backends/qnn/sdk/qnn_sdk_api.h"

#include <dlfcn.h>

#include <cstdarg>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <vector>

#include "HTP/QnnHtpCommon.h"
#include "HTP/QnnHtpGraph.h"
#include "HTP/QnnHtpMem.h"
#include "QnnInterface.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"

namespace kestrel::qnn::sdk {

namespace {

using GetProvidersFn = Qnn_ErrorHandle_t (*)(const QnnInterface_t*** provider_list, uint32_t* num_providers);

Error qnn_failed(const char* call, Qnn_ErrorHandle_t status, const std::string& what = "") {
  return make_error(ErrorCode::kInternal, "{} failed with QNN error {}{}{}", call, static_cast<uint64_t>(status & 0xffff),
                    what.empty() ? "" : ": ", what);
}

Qnn_DataType_t qnn_type(QnnDataType t) { return static_cast<Qnn_DataType_t>(static_cast<uint32_t>(t)); }

void log_callback(const char* format, QnnLog_Level_t level, uint64_t, va_list args) {
  char line[1024];
  std::vsnprintf(line, sizeof(line), format, args);
  log(level <= QNN_LOG_LEVEL_WARN ? LogLevel::kWarn : LogLevel::kDebug, "qnn: {}", line);
}

// A created tensor: the Qnn_Tensor_t QNN filled in (id), with the storage its pointers use.
struct SdkTensor {
  Qnn_Tensor_t tensor = QNN_TENSOR_INIT;
  std::string name;
  std::vector<uint32_t> dims;
};

struct SdkGraph {
  Qnn_GraphHandle_t handle = nullptr;
  std::deque<SdkTensor> tensors;  // by QnnTensorId; deque: pointers into it stay valid
  std::vector<QnnTensorId> app_read;
  std::vector<Qnn_Tensor_t> inputs, outputs;  // reused every execute
};

class SdkApi final : public QnnApi {
 public:
  SdkApi(std::string path, void* library) : path_(std::move(path)), library_(library) {}
  ~SdkApi() override {
    if (device_ != nullptr && api_.deviceFree != nullptr) api_.deviceFree(device_);
    if (backend_ != nullptr) api_.backendFree(backend_);
    if (log_ != nullptr && api_.logFree != nullptr) api_.logFree(log_);
    if (library_ != nullptr) dlclose(library_);
  }

  Status open() {
    auto get_providers = reinterpret_cast<GetProvidersFn>(dlsym(library_, "QnnInterface_getProviders"));
    if (get_providers == nullptr) return make_error(ErrorCode::kUnavailable, "{} lacks QnnInterface_getProviders", path_);
    const QnnInterface_t** providers = nullptr;
    uint32_t count = 0;
    if (get_providers(&providers, &count) != QNN_SUCCESS || providers == nullptr || count == 0)
      return make_error(ErrorCode::kUnavailable, "{}: QnnInterface_getProviders returned no provider", path_);
    const QnnInterface_t* chosen = nullptr;
    for (uint32_t i = 0; i < count && chosen == nullptr; ++i)
      if (providers[i]->apiVersion.coreApiVersion.major == QNN_API_VERSION_MAJOR) chosen = providers[i];
    if (chosen == nullptr)
      return make_error(ErrorCode::kUnsupported, "{}: no provider of QNN core API {}.x (this build's)", path_,
                        QNN_API_VERSION_MAJOR);
    api_ = chosen->QNN_INTERFACE_VER_NAME;
    if (api_.logCreate != nullptr) api_.logCreate(log_callback, QNN_LOG_LEVEL_WARN, &log_);
    if (Qnn_ErrorHandle_t s = api_.backendCreate(log_, nullptr, &backend_); s != QNN_SUCCESS)
      return qnn_failed("QnnBackend_create", s, path_);
    if (api_.deviceCreate != nullptr) {
      Qnn_ErrorHandle_t s = api_.deviceCreate(log_, nullptr, &device_);
      if (s != QNN_SUCCESS) {
        device_ = nullptr;
        log(LogLevel::kDebug, "qnn: {} has no device to create (QNN error {}); using the default", path_,
            static_cast<uint64_t>(s & 0xffff));
      }
    }
    return ok_status();
  }

  std::string describe() const override { return path_; }

  Result<QnnContextHandle> create_context(const QnnBackendConfig&) override {
    std::lock_guard lock(mutex_);
    Qnn_ContextHandle_t context = nullptr;
    if (Qnn_ErrorHandle_t s = api_.contextCreate(backend_, device_, nullptr, &context); s != QNN_SUCCESS)
      return qnn_failed("QnnContext_create", s);
    return static_cast<QnnContextHandle>(context);
  }

  Status free_context(QnnContextHandle context) override {
    std::lock_guard lock(mutex_);
    for (auto it = graphs_.begin(); it != graphs_.end();) {
      it = it->second.first == context ? graphs_.erase(it) : std::next(it);
    }
    if (Qnn_ErrorHandle_t s = api_.contextFree(static_cast<Qnn_ContextHandle_t>(context), nullptr); s != QNN_SUCCESS)
      return qnn_failed("QnnContext_free", s);
    return ok_status();
  }

  Result<QnnGraphHandle> create_graph(QnnContextHandle context, const std::string& name,
                                      const QnnBackendConfig& config) override {
    std::lock_guard lock(mutex_);
    QnnHtpGraph_CustomConfig_t precision = QNN_HTP_GRAPH_CUSTOM_CONFIG_INIT;
    precision.option = QNN_HTP_GRAPH_CONFIG_OPTION_PRECISION;
    precision.precision = config.fp16 ? QNN_PRECISION_FLOAT16 : QNN_PRECISION_FLOAT32;
    QnnHtpGraph_CustomConfig_t vtcm = QNN_HTP_GRAPH_CUSTOM_CONFIG_INIT;
    vtcm.option = QNN_HTP_GRAPH_CONFIG_OPTION_VTCM_SIZE;
    vtcm.vtcmSizeInMB = static_cast<uint32_t>(config.vtcm_mb);
    QnnGraph_Config_t precision_config = QNN_GRAPH_CONFIG_INIT;
    precision_config.option = QNN_GRAPH_CONFIG_OPTION_CUSTOM;
    precision_config.customConfig = &precision;
    QnnGraph_Config_t vtcm_config = QNN_GRAPH_CONFIG_INIT;
    vtcm_config.option = QNN_GRAPH_CONFIG_OPTION_CUSTOM;
    vtcm_config.customConfig = &vtcm;
    const QnnGraph_Config_t* configs[] = {&precision_config, config.vtcm_mb > 0 ? &vtcm_config : nullptr, nullptr};
    Qnn_GraphHandle_t graph = nullptr;
    if (Qnn_ErrorHandle_t s = api_.graphCreate(static_cast<Qnn_ContextHandle_t>(context), name.c_str(), configs, &graph);
        s != QNN_SUCCESS)
      return qnn_failed("QnnGraph_create", s, name);
    auto& entry = graphs_[graph];
    entry.first = context;
    entry.second = std::make_unique<SdkGraph>();
    entry.second->handle = graph;
    return static_cast<QnnGraphHandle>(graph);
  }

  Result<QnnTensorId> create_tensor(QnnGraphHandle graph_handle, const QnnTensorSpec& spec) override {
    std::lock_guard lock(mutex_);
    KESTREL_ASSIGN_OR_RETURN(SdkGraph * graph, find(graph_handle));
    SdkTensor& t = graph->tensors.emplace_back();
    t.name = spec.name;
    t.dims = spec.dims;
    Qnn_TensorV1_t& v1 = t.tensor.v1;
    v1.name = t.name.c_str();
    v1.type = static_cast<Qnn_TensorType_t>(static_cast<uint32_t>(spec.type));
    v1.dataFormat = QNN_TENSOR_DATA_FORMAT_FLAT_BUFFER;
    v1.dataType = qnn_type(spec.data_type);
    v1.rank = static_cast<uint32_t>(t.dims.size());
    v1.dimensions = t.dims.data();
    // Created as RAW: execute() sets each binding's memory type (QNN takes it per call, and
    // some backends refuse MEMHANDLE at creation).
    v1.memType = QNN_TENSORMEMTYPE_RAW;
    if (spec.type == QnnTensorType::kStatic) {
      v1.clientBuf.data = const_cast<uint8_t*>(spec.data.data());
      v1.clientBuf.dataSize = static_cast<uint32_t>(spec.data.size());
    }
    if (Qnn_ErrorHandle_t s = api_.tensorCreateGraphTensor(graph->handle, &t.tensor); s != QNN_SUCCESS) {
      graph->tensors.pop_back();
      return qnn_failed("QnnTensor_createGraphTensor", s, spec.name);
    }
    const auto id = static_cast<QnnTensorId>(graph->tensors.size() - 1);
    if (spec.type == QnnTensorType::kAppRead) graph->app_read.push_back(id);
    return id;
  }

  Status add_node(QnnGraphHandle graph_handle, const QnnOpSpec& op) override {
    std::lock_guard lock(mutex_);
    KESTREL_ASSIGN_OR_RETURN(SdkGraph * graph, find(graph_handle));
    auto tensor = [&](QnnTensorId id) -> Result<Qnn_Tensor_t> {
      if (id >= graph->tensors.size()) return make_error(ErrorCode::kInvalidArgument, "qnn: tensor {} does not exist", id);
      return graph->tensors[id].tensor;
    };
    std::vector<Qnn_Param_t> params;
    for (const QnnParam& p : op.params) {
      Qnn_Param_t param = QNN_PARAM_INIT;
      param.name = p.name.c_str();
      if (const auto* scalar = std::get_if<QnnScalar>(&p.value)) {
        param.paramType = QNN_PARAMTYPE_SCALAR;
        param.scalarParam.dataType = qnn_type(scalar->data_type);
        switch (scalar->data_type) {
          case QnnDataType::kFloat32: param.scalarParam.floatValue = scalar->f32; break;
          case QnnDataType::kUInt32: param.scalarParam.uint32Value = scalar->u32; break;
          case QnnDataType::kInt32: param.scalarParam.int32Value = scalar->i32; break;
          case QnnDataType::kBool8: param.scalarParam.bool8Value = scalar->bool8; break;
          default:
            return make_error(ErrorCode::kInvalidArgument, "qnn: scalar parameter '{}' of {} has type {}", p.name,
                              op.name, qnn_data_type_name(scalar->data_type));
        }
      } else {
        param.paramType = QNN_PARAMTYPE_TENSOR;
        KESTREL_ASSIGN_OR_RETURN(param.tensorParam, tensor(std::get<QnnTensorId>(p.value)));
      }
      params.push_back(param);
    }
    std::vector<Qnn_Tensor_t> inputs, outputs;
    for (QnnTensorId id : op.inputs) {
      KESTREL_ASSIGN_OR_RETURN(Qnn_Tensor_t t, tensor(id));
      inputs.push_back(t);
    }
    for (QnnTensorId id : op.outputs) {
      KESTREL_ASSIGN_OR_RETURN(Qnn_Tensor_t t, tensor(id));
      outputs.push_back(t);
    }
    Qnn_OpConfig_t config = QNN_OPCONFIG_INIT;
    config.v1.name = op.name.c_str();
    config.v1.packageName = op.package.c_str();
    config.v1.typeName = op.type.c_str();
    config.v1.numOfParams = static_cast<uint32_t>(params.size());
    config.v1.params = params.data();
    config.v1.numOfInputs = static_cast<uint32_t>(inputs.size());
    config.v1.inputTensors = inputs.data();
    config.v1.numOfOutputs = static_cast<uint32_t>(outputs.size());
    config.v1.outputTensors = outputs.data();
    if (Qnn_ErrorHandle_t s = api_.graphAddNode(graph->handle, config); s != QNN_SUCCESS)
      return qnn_failed("QnnGraph_addNode", s, fmt::format("{} ({})", op.name, op.type));
    return ok_status();
  }

  Status finalize(QnnGraphHandle graph_handle) override {
    std::lock_guard lock(mutex_);
    KESTREL_ASSIGN_OR_RETURN(SdkGraph * graph, find(graph_handle));
    if (Qnn_ErrorHandle_t s = api_.graphFinalize(graph->handle, nullptr, nullptr); s != QNN_SUCCESS)
      return qnn_failed("QnnGraph_finalize", s);
    return ok_status();
  }

  Result<std::vector<QnnTensorId>> graph_outputs(QnnGraphHandle graph_handle) override {
    std::lock_guard lock(mutex_);
    KESTREL_ASSIGN_OR_RETURN(SdkGraph * graph, find(graph_handle));
    return graph->app_read;  // creation order
  }

  Status execute(QnnGraphHandle graph_handle, std::span<const QnnTensorBinding> inputs,
                 std::span<const QnnTensorBinding> outputs) override {
    SdkGraph* graph = nullptr;
    {
      std::lock_guard lock(mutex_);
      KESTREL_ASSIGN_OR_RETURN(graph, find(graph_handle));
    }
    auto fill = [&](std::vector<Qnn_Tensor_t>& list, std::span<const QnnTensorBinding> bindings) -> Status {
      list.resize(bindings.size());
      for (size_t i = 0; i < bindings.size(); ++i) {
        const QnnTensorBinding& b = bindings[i];
        if (b.tensor >= graph->tensors.size())
          return make_error(ErrorCode::kInvalidArgument, "qnn: tensor {} does not exist", b.tensor);
        Qnn_Tensor_t t = graph->tensors[b.tensor].tensor;
        if (b.mem_type == QnnMemType::kRaw) {
          t.v1.memType = QNN_TENSORMEMTYPE_RAW;
          t.v1.clientBuf.data = b.data;
          t.v1.clientBuf.dataSize = static_cast<uint32_t>(b.bytes);
        } else {
          t.v1.memType = QNN_TENSORMEMTYPE_MEMHANDLE;
          t.v1.memHandle = static_cast<Qnn_MemHandle_t>(b.mem_handle);
        }
        list[i] = t;
      }
      return ok_status();
    };
    KESTREL_RETURN_IF_ERROR(fill(graph->inputs, inputs));
    KESTREL_RETURN_IF_ERROR(fill(graph->outputs, outputs));
    if (Qnn_ErrorHandle_t s = api_.graphExecute(graph->handle, graph->inputs.data(), static_cast<uint32_t>(inputs.size()),
                                                graph->outputs.data(), static_cast<uint32_t>(outputs.size()), nullptr,
                                                nullptr);
        s != QNN_SUCCESS)
      return qnn_failed("QnnGraph_execute", s);
    return ok_status();
  }

  Result<QnnApiMemHandle> register_memory(QnnContextHandle context, const QnnMemDescriptor& memory) override {
    std::vector<uint32_t> dims = memory.dims;
    Qnn_MemDescriptor_t descriptor = QNN_MEM_DESCRIPTOR_INIT;
    descriptor.memShape.numDim = static_cast<uint32_t>(dims.size());
    descriptor.memShape.dimSize = dims.data();
    descriptor.memShape.shapeConfig = nullptr;
    descriptor.dataType = qnn_type(memory.data_type);
#if (QNN_HTP_API_VERSION_MAJOR == 5 && QNN_HTP_API_VERSION_MINOR >= 16) || QNN_HTP_API_VERSION_MAJOR > 5
    QnnMemHtp_Descriptor_t htp{};
    htp.type = QNN_HTP_MEM_SHARED_BUFFER;
    htp.size = memory.total;
    htp.sharedBufferConfig.fd = memory.fd;
    htp.sharedBufferConfig.offset = memory.offset;
    descriptor.memType = QNN_MEM_TYPE_CUSTOM;
    descriptor.customInfo = &htp;
#else
    // This HTP API has no custom shared buffer: one ION registration per fd, at offset 0.
    if (memory.offset != 0)
      return make_error(ErrorCode::kUnsupported,
                        "qnn: this QNN SDK registers whole ION buffers only; the tensor is at offset {} of fd {}",
                        memory.offset, memory.fd);
    descriptor.memType = QNN_MEM_TYPE_ION;
    descriptor.ionInfo.fd = memory.fd;
#endif
    Qnn_MemHandle_t handle = nullptr;
    std::lock_guard lock(mutex_);
    if (Qnn_ErrorHandle_t s = api_.memRegister(static_cast<Qnn_ContextHandle_t>(context), &descriptor, 1, &handle);
        s != QNN_SUCCESS)
      return qnn_failed("QnnMem_register", s, fmt::format("fd {} offset {}", memory.fd, memory.offset));
    return static_cast<QnnApiMemHandle>(handle);
  }

  Status deregister_memory(QnnApiMemHandle handle) override {
    std::lock_guard lock(mutex_);
    Qnn_MemHandle_t h = static_cast<Qnn_MemHandle_t>(handle);
    if (Qnn_ErrorHandle_t s = api_.memDeRegister(&h, 1); s != QNN_SUCCESS) return qnn_failed("QnnMem_deRegister", s);
    return ok_status();
  }

 private:
  Result<SdkGraph*> find(QnnGraphHandle handle) {
    auto it = graphs_.find(static_cast<Qnn_GraphHandle_t>(handle));
    if (it == graphs_.end()) return make_error(ErrorCode::kInvalidArgument, "qnn: unknown graph handle");
    return it->second.second.get();
  }

  std::string path_;
  void* library_ = nullptr;
  QNN_INTERFACE_VER_TYPE api_ = QNN_INTERFACE_VER_TYPE_INIT;
  Qnn_LogHandle_t log_ = nullptr;
  Qnn_BackendHandle_t backend_ = nullptr;
  Qnn_DeviceHandle_t device_ = nullptr;
  std::mutex mutex_;
  // graph -> (its context, its tensors)
  std::map<Qnn_GraphHandle_t, std::pair<QnnContextHandle, std::unique_ptr<SdkGraph>>> graphs_;
};

}  // namespace

Result<std::shared_ptr<QnnApi>> open_qnn_sdk_api(const std::string& library_path) {
  dlerror();
  void* library = dlopen(library_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* why = dlerror();
    return make_error(ErrorCode::kUnavailable, "cannot load {} ({})", library_path, why ? why : "unknown error");
  }
  auto api = std::make_shared<SdkApi>(library_path, library);
  KESTREL_RETURN_IF_ERROR(api->open());
  return std::shared_ptr<QnnApi>(std::move(api));
}

}  // namespace kestrel::qnn::sdk
