// The QNN delegate at run time (backend id "qnn"). It lowers each payload to a QNN op graph and
// runs it through QnnApi: on a QNN backend library (libQnnHtp.so, through the SDK adapter built
// with QNN_SDK_ROOT) or on the CPU stand-in (library "stand-in"), which checks and executes the
// same graph on any host. Without the library (or, for a library, without the SDK adapter in
// the build), is_available() and init() say what is missing.
#pragma once

#include <memory>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/export/options.h"
#include "kestrel/runtime/backend.h"

namespace kestrel::qnn {

class QnnApi;  // src/backends/qnn/qnn_api.h: the narrow interface over QNN

inline constexpr const char* kQnnHtpLibraryEnv = "KESTREL_QNN_HTP_LIB";
inline constexpr const char* kQnnHtpDefaultLibrary = "libQnnHtp.so";
inline constexpr const char* kQnnStandIn = "stand-in";

struct QnnBackendOptions {
  // kQnnStandIn, a path to a QNN backend library, or empty: $KESTREL_QNN_HTP_LIB (which may
  // also say "stand-in"), else "libQnnHtp.so".
  std::string library;
  // Overrides `library` with an implementation of its own (tests inspect a stand-in this way).
  std::shared_ptr<QnnApi> api;
};

// Options taken at run time (`kestrel run --backend-option qnn.KEY=VALUE`): library.
const exporter::OptionTable& qnn_runtime_option_table();
// From options the table resolved (unknown names and wrong types are errors there).
Result<QnnBackendOptions> qnn_backend_options(const exporter::OptionMap& options);

// Whether this build contains the SDK adapter (configured with QNN_SDK_ROOT).
bool qnn_sdk_built();

std::shared_ptr<runtime::BackendInterface> make_qnn_backend(QnnBackendOptions options = {});

// Adds a "qnn" backend to the registry (always, so a program naming it gets the backend's own
// error instead of "unknown backend") and makes it the process's QnnMemRegistrar: rpcmem
// buffers bound to method I/O that reaches its QNN graphs are registered with their contexts.
void register_qnn_backend(runtime::BackendRegistry& registry, QnnBackendOptions options = {});

}  // namespace kestrel::qnn
