#include "kestrel/api/backend_catalog.h"

#include <fmt/format.h>

#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/backends/qnn/rpcmem_allocator.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/export/options.h"

namespace kestrel::api {

std::vector<std::string> exporter_backend_names() { return {"qnn"}; }

Result<std::shared_ptr<const exporter::BackendExporter>> find_exporter_backend(const std::string& name) {
  if (name == "qnn") return qnn::make_qnn_backend_exporter();
  const auto names = exporter_backend_names();
  const std::string closest = exporter::closest_match(name, names);
  return make_error(ErrorCode::kNotFound, "unknown backend '{}' (available: {}){}", name, fmt::join(names, ", "),
                    closest.empty() ? "" : fmt::format("; did you mean '{}'?", closest));
}

std::shared_ptr<const runtime::BackendRegistry> runtime_backends() {
  auto registry = std::make_shared<runtime::BackendRegistry>();
  qnn::register_qnn_backend(*registry);
  qnn::register_qnn_allocators();
  return registry;
}

}  // namespace kestrel::api
