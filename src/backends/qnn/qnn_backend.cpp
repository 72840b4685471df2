#include "kestrel/backends/qnn/qnn_backend.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "backends/qnn/qnn_runtime.h"
#include "backends/qnn/standin/standin_api.h"
#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/core/error_helpers.h"

#ifdef KESTREL_HAVE_QNN_SDK
#include "backends/qnn/sdk/qnn_sdk_api.h"
#endif

namespace kestrel::qnn {

namespace {

std::string resolve_library(const std::string& configured) {
  if (!configured.empty()) return configured;
  if (const char* env = std::getenv(kQnnHtpLibraryEnv); env != nullptr && *env != '\0') return env;
  return kQnnHtpDefaultLibrary;
}

class QnnBackend final : public runtime::BackendInterface {
 public:
  explicit QnnBackend(QnnBackendOptions options) : options_(std::move(options)) {}
  ~QnnBackend() override {
    if (probe_ != nullptr) dlclose(probe_);
  }

  std::string_view id() const override { return "qnn"; }

  Status is_available() const override {
    std::lock_guard lock(mutex_);
    return check_available();
  }

  Result<runtime::DelegateInstance> init(std::span<const uint8_t> payload, const runtime::CompileSpecs& compile_specs,
                                         const runtime::DelegateContext& where) override {
    std::shared_ptr<QnnRuntime> runtime;
    {
      std::lock_guard lock(mutex_);
      Status available = check_available();
      if (!available.ok()) return available.error().with_context("cannot initialize a QNN delegate");
      auto made = runtime_locked();
      if (!made.ok()) return made.error().with_context("backend 'qnn'");
      runtime = *made;
    }
    auto options = parse_qnn_compile_specs(compile_specs);
    if (!options.ok()) return options.error().with_context("backend 'qnn'");
    auto parsed = parse_qnn_payload(payload);
    if (!parsed.ok()) return parsed.error().with_context("backend 'qnn'");
    auto delegate = runtime->create_delegate(*parsed, *options, where);
    if (!delegate.ok()) return delegate.error().with_context("backend 'qnn'");
    runtime::DelegateInstance instance;
    instance.output_order = (*delegate)->output_order();
    instance.handle = delegate->release();
    return instance;
  }

  Status execute(void* handle, std::span<const TensorView> inputs, std::span<const TensorView> outputs) override {
    return static_cast<QnnDelegate*>(handle)->execute(inputs, outputs);
  }

  void destroy(void* handle) override { delete static_cast<QnnDelegate*>(handle); }

  // The runtime, once a delegate made it (null before).
  std::shared_ptr<QnnRuntime> current_runtime() const {
    std::lock_guard lock(mutex_);
    return runtime_;
  }

 private:
  // Caller holds mutex_.
  Status check_available() const {
    if (options_.api) return ok_status();
    const std::string library = resolve_library(options_.library);
    if (library == kQnnStandIn) return ok_status();
    if (probe_ == nullptr || library != probe_path_) {
      if (probe_ != nullptr) dlclose(probe_);
      dlerror();
      probe_ = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
      probe_path_ = library;
      if (probe_ == nullptr) {
        const char* why = dlerror();
        return make_error(ErrorCode::kUnavailable,
                          "backend 'qnn' is unavailable: cannot load {} ({}); install the QNN HTP runtime libraries, "
                          "set {} to the path of libQnnHtp.so, or run on the CPU stand-in (--backend-option "
                          "qnn.library={})",
                          library, why ? why : "unknown error", kQnnHtpLibraryEnv, kQnnStandIn);
      }
    }
    if (dlsym(probe_, "QnnInterface_getProviders") == nullptr)
      return make_error(ErrorCode::kUnavailable,
                        "backend 'qnn' is unavailable: {} does not export QnnInterface_getProviders (not a QNN "
                        "backend library)",
                        library);
    if (!qnn_sdk_built())
      return make_error(ErrorCode::kUnsupported,
                        "backend 'qnn' is unavailable: {} was found, but this build of Kestrel has no QNN SDK "
                        "adapter (configure it with QNN_SDK_ROOT set); --backend-option qnn.library={} runs the "
                        "CPU stand-in",
                        library, kQnnStandIn);
    return ok_status();
  }

  // Caller holds mutex_.
  Result<std::shared_ptr<QnnRuntime>> runtime_locked() {
    if (runtime_) return runtime_;
    std::shared_ptr<QnnApi> api = options_.api;
    const std::string library = resolve_library(options_.library);
    if (!api && library == kQnnStandIn) api = std::make_shared<StandinApi>();
#ifdef KESTREL_HAVE_QNN_SDK
    if (!api) {
      KESTREL_ASSIGN_OR_RETURN(api, sdk::open_qnn_sdk_api(library));
    }
#endif
    if (!api) return make_error(ErrorCode::kUnsupported, "no QNN SDK adapter in this build for {}", library);
    runtime_ = std::make_shared<QnnRuntime>(std::move(api));
    return runtime_;
  }

  QnnBackendOptions options_;
  mutable std::mutex mutex_;
  mutable void* probe_ = nullptr;  // dlopen handle of the library, for is_available()
  mutable std::string probe_path_;
  std::shared_ptr<QnnRuntime> runtime_;
};

// The process-wide registrar: forwards to the backend's runtime while the backend lives.
class BackendRegistrar final : public QnnMemRegistrar {
 public:
  explicit BackendRegistrar(std::weak_ptr<QnnBackend> backend) : backend_(std::move(backend)) {}

  Result<std::vector<QnnContextId>> contexts_for(const std::string& method, size_t io_index, bool is_input) override {
    auto runtime = current();
    if (!runtime) return std::vector<QnnContextId>{};
    return runtime->contexts_for(method, io_index, is_input);
  }
  Result<QnnMemHandle> register_memory(QnnContextId context, const QnnMemRegion& region) override {
    auto runtime = current();
    if (!runtime) return make_error(ErrorCode::kUnavailable, "qnn: the backend that owned context {} is gone", context);
    return runtime->register_memory(context, region);
  }
  void deregister_memory(QnnContextId context, QnnMemHandle handle) override {
    if (auto runtime = current()) runtime->deregister_memory(context, handle);
  }

 private:
  std::shared_ptr<QnnRuntime> current() const {
    auto backend = backend_.lock();
    return backend ? backend->current_runtime() : nullptr;
  }
  std::weak_ptr<QnnBackend> backend_;
};

std::vector<exporter::OptionSpec> runtime_specs() {
  exporter::OptionSpec library;
  library.name = "library";
  library.destination = exporter::OptionDestination::kRuntime;
  library.type = exporter::OptionType::kString;
  library.default_value = std::string();
  library.help = fmt::format(
      "QNN implementation: '{}' (the CPU stand-in) or the path of a QNN backend library (default: ${}, else {})",
      kQnnStandIn, kQnnHtpLibraryEnv, kQnnHtpDefaultLibrary);
  return {library};
}

}  // namespace

const exporter::OptionTable& qnn_runtime_option_table() {
  static const exporter::OptionTable table("qnn", runtime_specs());
  return table;
}

Result<QnnBackendOptions> qnn_backend_options(const exporter::OptionMap& options) {
  KESTREL_ASSIGN_OR_RETURN(exporter::OptionMap resolved, qnn_runtime_option_table().resolve(options));
  QnnBackendOptions out;
  out.library = std::get<std::string>(resolved.at("library"));
  return out;
}

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

void register_qnn_backend(runtime::BackendRegistry& registry, QnnBackendOptions options) {
  auto backend = std::make_shared<QnnBackend>(std::move(options));
  set_qnn_mem_registrar(std::make_shared<BackendRegistrar>(backend));
  registry.add(backend);
}

}  // namespace kestrel::qnn
