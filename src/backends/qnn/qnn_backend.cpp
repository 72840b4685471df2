#include "kestrel/backends/qnn/qnn_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"

#ifdef KESTREL_HAVE_QNN_SDK
#include "backends/qnn/sdk/qnn_sdk_delegate.h"
#endif

namespace kestrel::qnn {

namespace {

std::string resolve_htp_path(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv(kQnnHtpLibraryEnv); env != nullptr && *env != '\0') return env;
  return kQnnHtpDefaultLibrary;
}

class QnnBackend final : public runtime::BackendInterface {
 public:
  explicit QnnBackend(QnnBackendOptions options) : options_(std::move(options)) {}
  ~QnnBackend() override {
    if (library_ != nullptr) dlclose(library_);
  }

  std::string_view id() const override { return "qnn"; }

  Status is_available() const override {
    std::lock_guard lock(mutex_);
    const std::string path = resolve_htp_path(options_.htp_library_path);
    if (library_ == nullptr || path != library_path_) {
      if (library_ != nullptr) dlclose(library_);
      dlerror();
      library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      library_path_ = path;
      if (library_ == nullptr) {
        const char* why = dlerror();
        return make_error(ErrorCode::kUnavailable,
                          "backend 'qnn' is unavailable: cannot load {} ({}); install the QNN HTP runtime "
                          "libraries or set {} to the path of libQnnHtp.so",
                          path, why ? why : "unknown error", kQnnHtpLibraryEnv);
      }
    }
    if (dlsym(library_, "QnnInterface_getProviders") == nullptr) {
      return make_error(ErrorCode::kUnavailable,
                        "backend 'qnn' is unavailable: {} does not export QnnInterface_getProviders (not a "
                        "QNN backend library)",
                        path);
    }
    if (!qnn_sdk_built()) {
      return make_error(ErrorCode::kUnsupported,
                        "backend 'qnn' is unavailable: {} was found, but this build of Kestrel has no QNN "
                        "delegate (configure it with QNN_SDK_ROOT set)",
                        path);
    }
    return ok_status();
  }

  Result<runtime::DelegateInstance> init(std::span<const uint8_t> payload,
                                         const runtime::CompileSpecs& compile_specs) override {
    Status available = is_available();
    if (!available.ok()) return available.error().with_context("cannot initialize a QNN delegate");
    auto options = parse_qnn_compile_specs(compile_specs);
    if (!options.ok()) return options.error().with_context("backend 'qnn'");
    auto parsed = parse_qnn_payload(payload);
    if (!parsed.ok()) return parsed.error().with_context("backend 'qnn'");
#ifdef KESTREL_HAVE_QNN_SDK
    std::lock_guard lock(mutex_);
    return sdk::init_delegate(library_, *parsed, *options);
#else
    return make_error(ErrorCode::kInternal, "backend 'qnn': no delegate in this build");
#endif
  }

  Status execute(void* handle, std::span<const TensorView> inputs, std::span<TensorView> outputs) override {
#ifdef KESTREL_HAVE_QNN_SDK
    return sdk::execute_delegate(handle, inputs, outputs);
#else
    return make_error(ErrorCode::kInternal, "backend 'qnn': execute without a delegate (init cannot succeed in this build)");
#endif
  }

  void destroy(void* handle) override {
#ifdef KESTREL_HAVE_QNN_SDK
    sdk::destroy_delegate(handle);
#endif
  }

 private:
  QnnBackendOptions options_;
  mutable std::mutex mutex_;
  mutable void* library_ = nullptr;
  mutable std::string library_path_;
};

}  // namespace

bool qnn_sdk_built() {
#ifdef KESTREL_HAVE_QNN_SDK
  return true;
#else
  return false;
#endif
}

std::shared_ptr<runtime::BackendInterface> make_qnn_backend(QnnBackendOptions options) {
  return std::make_shared<QnnBackend>(std::move(options));
}

void register_qnn_backend(runtime::BackendRegistry& registry) { registry.add(make_qnn_backend()); }

}  // namespace kestrel::qnn
