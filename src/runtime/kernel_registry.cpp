// Kernel lookup by op name and typed attribute access for kernels.
#include <algorithm>
#include <iterator>
#include <numeric>
#include <vector>

#include "kestrel/core/error_helpers.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::runtime {

namespace {

// Names of the AttrValue alternatives, in variant order, for "is X, expected Y" messages.
constexpr const char* kAttrTypeNames[] = {"int", "float", "string", "ints", "floats"};
static_assert(std::size(kAttrTypeNames) == std::variant_size_v<program::AttrValue>);

const char* attr_type_name(const program::AttrValue& value) { return kAttrTypeNames[value.index()]; }

// Levenshtein distance; names are short, so the two-row table is plenty.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

// --- AttrReader -------------------------------------------------------------------------------

#define KESTREL_ATTR_LOOKUP(expected)                                                          \
  auto it = attrs_.find(name);                                                                 \
  if (it == attrs_.end())                                                                      \
    return make_error(ErrorCode::kInvalidArgument, "{}: missing attribute '{}' ({})", op_, name, \
                      expected);

Result<int64_t> AttrReader::get_int(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("int")
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected int", op_, name,
                    attr_type_name(it->second));
}

int64_t AttrReader::get_int_or(const std::string& name, int64_t fallback) const {
  auto value = get_int(name);
  return value.ok() ? *value : fallback;
}

Result<double> AttrReader::get_float(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("float")
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected float", op_,
                    name, attr_type_name(it->second));
}

double AttrReader::get_float_or(const std::string& name, double fallback) const {
  auto value = get_float(name);
  return value.ok() ? *value : fallback;
}

Result<std::string> AttrReader::get_string(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("string")
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected string", op_,
                    name, attr_type_name(it->second));
}

std::string AttrReader::get_string_or(const std::string& name, const std::string& fallback) const {
  auto value = get_string(name);
  return value.ok() ? *value : fallback;
}

Result<std::vector<int64_t>> AttrReader::get_ints(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("ints")
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  // An empty list carries no element type, so a serializer may hand it back as floats.
  if (const auto* v = std::get_if<std::vector<double>>(&it->second); v && v->empty())
    return std::vector<int64_t>{};
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected ints", op_, name,
                    attr_type_name(it->second));
}

#undef KESTREL_ATTR_LOOKUP

// --- KernelRegistry ---------------------------------------------------------------------------

Result<KernelFn> KernelRegistry::find(std::string_view op) const {
  auto it = kernels_.find(op);
  if (it != kernels_.end()) return it->second;
  if (kernels_.empty())
    return make_error(ErrorCode::kNotFound, "no kernel registered for op '{}' (the registry is empty)",
                      op);
  const std::string* closest = nullptr;
  size_t best = 0;
  for (const auto& [name, fn] : kernels_) {
    const size_t d = edit_distance(op, name);
    if (closest == nullptr || d < best) {
      closest = &name;
      best = d;
    }
  }
  return make_error(ErrorCode::kNotFound, "no kernel registered for op '{}' (did you mean '{}'?)", op,
                    *closest);
}

std::vector<std::string> KernelRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(kernels_.size());
  for (const auto& [name, fn] : kernels_) out.push_back(name);
  return out;
}

}  // namespace kestrel::runtime
