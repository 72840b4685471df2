#include "tools/backend_catalog.h"

#include <fmt/format.h>

#include <map>

#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/backends/qnn/rpcmem_allocator.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/export/options.h"

namespace kestrel::tools {

namespace {

std::vector<std::string> runtime_backend_names() { return {"qnn"}; }

// "qnn.library=stand-in" -> {"qnn": ["library=stand-in"]}.
Result<std::map<std::string, std::vector<std::string>>> split_backend_options(const std::vector<std::string>& options) {
  std::map<std::string, std::vector<std::string>> by_backend;
  const auto names = runtime_backend_names();
  for (const std::string& option : options) {
    const size_t dot = option.find('.');
    const size_t equals = option.find('=');
    if (dot == std::string::npos || equals == std::string::npos || dot > equals || dot == 0)
      return make_error(ErrorCode::kInvalidArgument, "--backend-option '{}' is not NAME.KEY=VALUE", option);
    const std::string backend = option.substr(0, dot);
    if (std::find(names.begin(), names.end(), backend) == names.end()) {
      const std::string closest = exporter::closest_match(backend, names);
      return make_error(ErrorCode::kNotFound, "--backend-option '{}': unknown backend '{}' (backends: {}){}", option,
                        backend, fmt::join(names, ", "), closest.empty() ? "" : fmt::format("; did you mean '{}'?", closest));
    }
    by_backend[backend].push_back(option.substr(dot + 1));
  }
  return by_backend;
}

}  // namespace

std::vector<std::string> exporter_backend_names() { return {"qnn"}; }

Result<std::shared_ptr<const exporter::BackendExporter>> find_exporter_backend(const std::string& name) {
  if (name == "qnn") return qnn::make_qnn_backend_exporter();
  const auto names = exporter_backend_names();
  const std::string closest = exporter::closest_match(name, names);
  return make_error(ErrorCode::kNotFound, "unknown backend '{}' (available: {}){}", name, fmt::join(names, ", "),
                    closest.empty() ? "" : fmt::format("; did you mean '{}'?", closest));
}

Result<std::shared_ptr<const runtime::BackendRegistry>> runtime_backends(const std::vector<std::string>& backend_options) {
  KESTREL_ASSIGN_OR_RETURN(auto by_backend, split_backend_options(backend_options));
  auto qnn_options = qnn::qnn_runtime_option_table().parse_cli(by_backend["qnn"]);
  if (!qnn_options.ok()) return qnn_options.error().with_context("--backend-option");
  KESTREL_ASSIGN_OR_RETURN(qnn::QnnBackendOptions qnn_backend, qnn::qnn_backend_options(*qnn_options));
  auto registry = std::make_shared<runtime::BackendRegistry>();
  qnn::register_qnn_backend(*registry, std::move(qnn_backend));
  qnn::register_qnn_allocators();
  return std::shared_ptr<const runtime::BackendRegistry>(std::move(registry));
}

}  // namespace kestrel::tools
