// QnnApi over a QNN backend library's QnnInterface_t (libQnnHtp.so on a device). Built only
// with QNN_SDK_ROOT (KESTREL_HAVE_QNN_SDK); scripts/check-qnn-sdk.sh compiles it against an SDK.
#pragma once

#include <memory>
#include <string>

#include "backends/qnn/qnn_api.h"
#include "kestrel/core/result.h"

namespace kestrel::qnn::sdk {

// Opens the library (dlopen), picks the provider of the core API major version this build has
// and creates its backend (and device, when it has devices). Errors name the library and the
// call that failed.
Result<std::shared_ptr<QnnApi>> open_qnn_sdk_api(const std::string& library_path);

}  // namespace kestrel::qnn::sdk
