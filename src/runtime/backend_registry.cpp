#include <fmt/format.h>

#include "kestrel/core/error_helpers.h"
#include "kestrel/runtime/backend.h"

namespace kestrel::runtime {

void BackendRegistry::add(std::shared_ptr<BackendInterface> backend) {
  const std::string id(backend->id());
  backends_[id] = std::move(backend);
}

Result<std::shared_ptr<BackendInterface>> BackendRegistry::find(std::string_view id) const {
  auto it = backends_.find(id);
  if (it == backends_.end())
    return make_error(ErrorCode::kNotFound, "backend '{}' is not registered (registered: {})", id,
                      ids().empty() ? std::string("none") : fmt::format("{}", fmt::join(ids(), ", ")));
  return it->second;
}

std::vector<std::string> BackendRegistry::ids() const {
  std::vector<std::string> result;
  for (const auto& [id, _] : backends_) result.push_back(id);
  return result;
}

}  // namespace kestrel::runtime
