#include <fmt/format.h>

#include "kestrel/core/error_helpers.h"
#include "kestrel/llm/hf_static_io_manager.h"
#include "kestrel/llm/io_manager.h"
#include "kestrel/program/io_contract.h"

namespace kestrel::llm {

IOManagerRegistry& IOManagerRegistry::global() {
  static IOManagerRegistry* registry = [] {
    auto* created = new IOManagerRegistry();
    created->add(contract::hf_static::kName, contract::hf_static::kVersion,
                 [] { return std::make_unique<HfStaticIOManager>(); });
    return created;
  }();
  return *registry;
}

void IOManagerRegistry::add(const std::string& contract, int64_t version, IOManagerFactory factory) {
  factories_[{contract, version}] = std::move(factory);
}

std::vector<std::string> IOManagerRegistry::registered() const {
  std::vector<std::string> names;
  for (const auto& [key, _] : factories_) names.push_back(fmt::format("{} v{}", key.first, key.second));
  return names;
}

Result<std::unique_ptr<IOManager>> IOManagerRegistry::create(const std::string& contract, int64_t version) const {
  auto it = factories_.find({contract, version});
  if (it == factories_.end())
    return make_error(ErrorCode::kUnsupported, "no IOManager for contract '{}' version {} (registered: {})", contract,
                      version, fmt::join(registered(), ", "));
  return it->second();
}

Result<std::unique_ptr<IOManager>> IOManagerRegistry::create_for(const runtime::Program& program) const {
  const auto& meta = program.metadata();
  auto contract_it = meta.find(contract::kIoContract);
  if (contract_it == meta.end() || !std::holds_alternative<std::string>(contract_it->second))
    return make_error(ErrorCode::kInvalidArgument,
                      "program metadata has no string '{}': it declares no I/O contract (registered: {})",
                      contract::kIoContract, fmt::join(registered(), ", "));
  auto version_it = meta.find(contract::kIoContractVersion);
  if (version_it == meta.end() || !std::holds_alternative<int64_t>(version_it->second))
    return make_error(ErrorCode::kInvalidArgument, "program metadata has no integer '{}'",
                      contract::kIoContractVersion);
  return create(std::get<std::string>(contract_it->second), std::get<int64_t>(version_it->second));
}

}  // namespace kestrel::llm
