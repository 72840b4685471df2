// The QNN delegate at run time (backend id "qnn"). Without the QNN SDK in the build, or
// without libQnnHtp.so on the machine, is_available() and init() return an error that names
// the backend and the missing piece, so a program that needs QNN fails to load with it.
#pragma once

#include <memory>
#include <string>

#include "kestrel/runtime/backend.h"

namespace kestrel::qnn {

inline constexpr const char* kQnnHtpLibraryEnv = "KESTREL_QNN_HTP_LIB";
inline constexpr const char* kQnnHtpDefaultLibrary = "libQnnHtp.so";

struct QnnBackendOptions {
  std::string htp_library_path;  // empty: $KESTREL_QNN_HTP_LIB, else "libQnnHtp.so"
};

// Whether this build contains the SDK-bound delegate (configured with QNN_SDK_ROOT).
bool qnn_sdk_built();

std::shared_ptr<runtime::BackendInterface> make_qnn_backend(QnnBackendOptions options = {});

// Adds the "qnn" backend to the registry (always, so a program naming it gets the backend's
// own error instead of "unknown backend").
void register_qnn_backend(runtime::BackendRegistry& registry);

}  // namespace kestrel::qnn
