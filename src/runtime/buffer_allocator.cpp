#include "kestrel/runtime/buffer_allocator.h"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "kestrel/core/error_helpers.h"
#include "kestrel/runtime/heap_allocator.h"
#include "kestrel/runtime/memfd_allocator.h"

namespace kestrel::runtime {

namespace {
struct AllocatorRegistry {
  std::mutex mutex;
  std::map<std::string, BufferAllocatorFactory> factories{
      {"heap", [] { return std::unique_ptr<BufferAllocator>(new HeapAllocator()); }},
      {"memfd", [] { return std::unique_ptr<BufferAllocator>(new MemfdAllocator()); }},
  };
};

AllocatorRegistry& registry() {
  static AllocatorRegistry instance;
  return instance;
}
}  // namespace

void register_buffer_allocator(const std::string& name, BufferAllocatorFactory factory) {
  std::lock_guard lock(registry().mutex);
  registry().factories[name] = factory;
}

Result<std::unique_ptr<BufferAllocator>> make_buffer_allocator(const std::string& name) {
  std::lock_guard lock(registry().mutex);
  auto it = registry().factories.find(name);
  if (it == registry().factories.end()) {
    std::vector<std::string> names;
    for (const auto& [known, _] : registry().factories) names.push_back(known);
    return make_error(ErrorCode::kNotFound, "unknown buffer allocator '{}' (registered: {})", name,
                      fmt::join(names, ", "));
  }
  return it->second();
}

std::vector<std::string> buffer_allocator_names() {
  std::lock_guard lock(registry().mutex);
  std::vector<std::string> names;
  for (const auto& [name, _] : registry().factories) names.push_back(name);
  return names;
}

}  // namespace kestrel::runtime
