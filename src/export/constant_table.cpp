#include "kestrel/export/constant_table.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <optional>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/tensor.h"

namespace kestrel::exporter {

namespace {

// Compared without producing the bytes when possible: the same object (the methods of one export
// share each weight's), or two held buffers compared in place. Produced bytes are read only for
// two different objects under one name.
Result<bool> same_bytes(const ConstantData& a, const ConstantData& b) {
  if (&a == &b) return true;
  if (a.size() != b.size()) return false;
  if (a.is_held() && b.is_held()) {
    const auto x = a.held_bytes(), y = b.held_bytes();
    return x.data() == y.data() || x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0;
  }
  KESTREL_ASSIGN_OR_RETURN(const std::vector<uint8_t> x, a.read_all());
  KESTREL_ASSIGN_OR_RETURN(const std::vector<uint8_t> y, b.read_all());
  return x == y;
}

// The numeric suffix of "<prefix>_<digits>", if `name` has that form.
std::optional<uint64_t> numeric_suffix(const std::string& name, const std::string& stem) {
  if (name.size() <= stem.size() || name.compare(0, stem.size(), stem) != 0) return std::nullopt;
  const char* begin = name.data() + stem.size();
  const char* end = name.data() + name.size();
  if (!std::all_of(begin, end, [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return std::nullopt;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;  // too large to be a counter
  return value;
}

}  // namespace

Result<std::string> ConstantTable::add_parameter(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                                 std::shared_ptr<const ConstantData> data) {
  if (name.empty()) return make_error(ErrorCode::kInvalidArgument, "a constant needs a name");
  if (!data) return make_error(ErrorCode::kInvalidArgument, "constant '{}' has no data", name);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  auto bytes = dtype_storage_bytes(dtype, numel, shape.empty() ? 1 : shape.back());
  if (!bytes.ok()) return bytes.error().with_context(fmt::format("constant '{}'", name));
  if (*bytes != data->size())
    return make_error(ErrorCode::kInvalidArgument, "constant '{}' holds {} bytes but {} {} needs {}", name,
                      data->size(), dtype_name(dtype), dims_string(shape), *bytes);
  if (auto it = index_.find(name); it != index_.end()) {
    const ConstantEntry& existing = entries_[it->second];
    if (existing.dtype != dtype || existing.shape != shape)
      return make_error(ErrorCode::kInvalidArgument,
                        "constant '{}' is already in the program as {} {}, now given as {} {}", name,
                        dtype_name(existing.dtype), dims_string(existing.shape), dtype_name(dtype),
                        dims_string(shape));
    auto same = same_bytes(*existing.data, *data);
    if (!same.ok()) return same.error().with_context(fmt::format("comparing constant '{}'", name));
    if (!*same)
      return make_error(ErrorCode::kInvalidArgument,
                        "constant '{}' is already in the program with different bytes", name);
    return name;
  }
  index_[name] = entries_.size();
  names_.insert(name);
  entries_.push_back({name, dtype, std::move(shape), std::move(data), false});
  return name;
}

std::string ConstantTable::lift(const std::string& prefix, DType dtype, std::vector<int64_t> shape,
                                std::shared_ptr<const ConstantData> data) {
  const std::string stem = prefix + "_";
  uint64_t next = 0;
  for (auto it = names_.lower_bound(stem); it != names_.end() && it->compare(0, stem.size(), stem) == 0; ++it)
    if (auto suffix = numeric_suffix(*it, stem); suffix && *suffix + 1 > next) next = *suffix + 1;
  std::string name = stem + std::to_string(next);
  while (names_.count(name)) name = stem + std::to_string(++next);  // only after wrap-around
  index_[name] = entries_.size();
  names_.insert(name);
  entries_.push_back({name, dtype, std::move(shape), std::move(data), true});
  return name;
}

void ConstantTable::reserve(const std::string& name) { names_.insert(name); }

const ConstantEntry* ConstantTable::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Status lift_constants(Graph& graph, ConstantTable& table, const std::string& prefix) {
  const std::string stem = prefix + "_";
  // A fresh name must not collide with another value of this graph either.
  for (const Value& value : graph.values()) {
    if (value.input_kind == InputKind::kConstant) continue;  // renamed below
    if (value.name.compare(0, stem.size(), stem) == 0 && numeric_suffix(value.name, stem))
      table.reserve(value.name);
  }
  for (ValueId id : graph.inputs()) {
    Value& value = graph.value(id);
    if (value.input_kind != InputKind::kConstant && value.input_kind != InputKind::kParameter) continue;
    if (!value.data)
      return make_error(ErrorCode::kInvalidArgument, "graph input {} ('{}') is a {} without data", id, value.name,
                        value.input_kind == InputKind::kConstant ? "constant" : "parameter");
    if (value.input_kind == InputKind::kConstant) {
      value.name = table.lift(prefix, value.dtype, value.shape, value.data);
    } else {
      auto added = table.add_parameter(value.name, value.dtype, value.shape, value.data);
      if (!added.ok()) return added.error().with_context(fmt::format("lifting parameter {} ('{}')", id, value.name));
    }
  }
  return ok_status();
}

}  // namespace kestrel::exporter
