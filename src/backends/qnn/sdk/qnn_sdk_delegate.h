// The part of the QNN delegate that calls the QNN API. Built only when QNN_SDK_ROOT is set
// (KESTREL_HAVE_QNN_SDK); nothing in the default build includes it.
#pragma once

#include <span>

#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/runtime/backend.h"

namespace kestrel::qnn::sdk {

// `htp_library` is the dlopen handle of libQnnHtp.so (kept open by the backend).
Result<runtime::DelegateInstance> init_delegate(void* htp_library, const QnnPayload& payload,
                                                const QnnCompileOptions& options);
Status execute_delegate(void* handle, std::span<const TensorView> inputs, std::span<TensorView> outputs);
void destroy_delegate(void* handle);

}  // namespace kestrel::qnn::sdk
