// SDK-bound QNN delegate: a skeleton. It resolves the QNN interface from libQnnHtp.so and
// creates a backend, device and context, then stops: translating a Kestrel payload into QNN
// graph nodes (op table in op_support.cpp), finalizing, executing and registering rpcmem
// buffers (QnnMemRegistrar) are not written yet, and init says so. This file has not been
// compiled in the project's CI, which has no SDK.
#ifdef KESTREL_HAVE_QNN_SDK

#include "backends/qnn/sdk/qnn_sdk_delegate.h"

#include <dlfcn.h>

#include "QnnInterface.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn::sdk {

namespace {

using GetProvidersFn = Qnn_ErrorHandle_t (*)(const QnnInterface_t*** provider_list, uint32_t* num_providers);

Result<const QnnInterface_t*> find_provider(void* library) {
  auto get_providers = reinterpret_cast<GetProvidersFn>(dlsym(library, "QnnInterface_getProviders"));
  if (get_providers == nullptr) {
    return make_error(ErrorCode::kUnavailable, "backend 'qnn': QnnInterface_getProviders is missing");
  }
  const QnnInterface_t** providers = nullptr;
  uint32_t count = 0;
  if (get_providers(&providers, &count) != QNN_SUCCESS || providers == nullptr || count == 0) {
    return make_error(ErrorCode::kUnavailable, "backend 'qnn': QnnInterface_getProviders returned no provider");
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (providers[i]->apiVersion.coreApiVersion.major == QNN_API_VERSION_MAJOR) return providers[i];
  }
  return make_error(ErrorCode::kUnsupported,
                    "backend 'qnn': no provider with QNN core API major version {} (the SDK Kestrel was built with)",
                    QNN_API_VERSION_MAJOR);
}

}  // namespace

Result<runtime::DelegateInstance> init_delegate(void* htp_library, const QnnPayload& payload,
                                                const QnnCompileOptions& options) {
  KESTREL_ASSIGN_OR_RETURN(const QnnInterface_t* provider, find_provider(htp_library));
  const auto& api = provider->QNN_INTERFACE_VER_NAME;
  Qnn_BackendHandle_t backend = nullptr;
  if (api.backendCreate(nullptr, nullptr, &backend) != QNN_SUCCESS) {
    return make_error(ErrorCode::kUnavailable, "backend 'qnn': backendCreate failed");
  }
  Qnn_DeviceHandle_t device = nullptr;
  if (api.deviceCreate != nullptr && api.deviceCreate(nullptr, nullptr, &device) != QNN_SUCCESS) {
    api.backendFree(backend);
    return make_error(ErrorCode::kUnavailable, "backend 'qnn': deviceCreate failed for {}", options.soc_model);
  }
  Qnn_ContextHandle_t context = nullptr;
  if (api.contextCreate(backend, device, nullptr, &context) != QNN_SUCCESS) {
    if (device != nullptr) api.deviceFree(device);
    api.backendFree(backend);
    return make_error(ErrorCode::kUnavailable, "backend 'qnn': contextCreate failed");
  }
  // Graph construction from the payload goes here: graphCreate, a tensor per payload value
  // (static tensors from embedded bytes), graphAddNode per payload node, graphFinalize; the
  // instance would record output_order from each output's output_index.
  api.contextFree(context, nullptr);
  if (device != nullptr) api.deviceFree(device);
  api.backendFree(backend);
  return make_error(ErrorCode::kUnsupported,
                    "backend 'qnn': building a QNN graph from a Kestrel payload ({} nodes) is not "
                    "implemented in this build",
                    payload.nodes.size());
}

Status execute_delegate(void*, std::span<const TensorView>, std::span<TensorView>) {
  return make_error(ErrorCode::kUnsupported, "backend 'qnn': execute is not implemented in this build");
}

void destroy_delegate(void*) {}

}  // namespace kestrel::qnn::sdk

#endif  // KESTREL_HAVE_QNN_SDK
