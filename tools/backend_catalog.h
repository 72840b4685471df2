// The backends a user can pick by name on the command line. Only the tools name backends.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/partitioner.h"
#include "kestrel/runtime/backend.h"

namespace kestrel::tools {

std::vector<std::string> exporter_backend_names();
Result<std::shared_ptr<const exporter::BackendExporter>> find_exporter_backend(const std::string& name);
// Every runtime backend and buffer allocator this build has, registered. `backend_options` are
// "NAME.KEY=VALUE" assignments (kestrel run --backend-option), validated by backend NAME's
// runtime option table: an unknown backend or key is an error naming the closest valid one.
Result<std::shared_ptr<const runtime::BackendRegistry>> runtime_backends(
    const std::vector<std::string>& backend_options = {});

}  // namespace kestrel::tools
