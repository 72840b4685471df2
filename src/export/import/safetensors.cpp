// Safetensors: an 8-byte little-endian header length N, N bytes of JSON
// {name: {dtype, shape, data_offsets: [begin, end)}, "__metadata__": {str: str}}, then the data
// area; offsets are relative to the start of the data area. Nothing in the file is trusted.
#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/tensor.h"

namespace kestrel::exporter::import {

namespace {

// The largest header accepted (the reference implementation uses the same bound).
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct StDType {
  const char* name;
  size_t size;
  std::optional<DType> dtype;
};
constexpr StDType kStDTypes[] = {
    {"BOOL", 1, std::nullopt},    {"U8", 1, DType::kU8},        {"I8", 1, std::nullopt},
    {"F8_E5M2", 1, std::nullopt}, {"F8_E4M3", 1, std::nullopt}, {"I16", 2, std::nullopt},
    {"U16", 2, std::nullopt},     {"F16", 2, DType::kF16},      {"BF16", 2, DType::kBF16},
    {"I32", 4, DType::kI32},      {"U32", 4, std::nullopt},     {"F32", 4, DType::kF32},
    {"F64", 8, std::nullopt},     {"I64", 8, DType::kI64},      {"U64", 8, std::nullopt},
};

const StDType* find_dtype(const std::string& name) {
  for (const auto& d : kStDTypes)
    if (name == d.name) return &d;
  return nullptr;
}

}  // namespace

Result<std::vector<TensorEntry>> parse_safetensors(std::span<const uint8_t> file,
                                                   const std::string& label) {
  if (file.size() < 8)
    return make_error(ErrorCode::kCorrupt,
                      "{}: file is {} bytes, too short for the 8-byte header length", label,
                      file.size());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = header_len << 8 | file[static_cast<size_t>(i)];
  const uint64_t available = file.size() - 8;
  if (header_len > available)
    return make_error(ErrorCode::kCorrupt,
                      "{}: header length {} exceeds the file size ({} bytes, {} after the length)",
                      label, header_len, file.size(), available);
  if (header_len > kMaxHeaderBytes)
    return make_error(ErrorCode::kCorrupt, "{}: header length {} exceeds the limit of {} bytes",
                      label, header_len, kMaxHeaderBytes);
  if (header_len < 2)
    return make_error(ErrorCode::kCorrupt, "{}: header length {} is too small for a JSON object",
                      label, header_len);

  const auto* header_begin = reinterpret_cast<const char*>(file.data() + 8);
  auto parsed = parse_json_unique_keys(std::string_view(header_begin, header_len), label + " header");
  if (!parsed.ok()) return Error(ErrorCode::kCorrupt, parsed.error().message());
  const nlohmann::json header = std::move(parsed).value();
  if (!header.is_object())
    return make_error(ErrorCode::kCorrupt, "{}: header must be a JSON object, got {}", label,
                      header.type_name());

  const std::span<const uint8_t> data = file.subspan(8 + header_len);
  std::vector<TensorEntry> entries;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  entries.reserve(header.size());
  for (const auto& [name, info] : header.items()) {
    if (name == "__metadata__") {
      if (!info.is_object())
        return make_error(ErrorCode::kCorrupt, "{}: __metadata__ must be an object, got {}", label,
                          info.type_name());
      for (const auto& [key, value] : info.items())
        if (!value.is_string())
          return make_error(ErrorCode::kCorrupt, "{}: __metadata__ value '{}' must be a string",
                            label, key);
      continue;
    }
    if (!info.is_object())
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' must be an object, got {}", label,
                        name, info.type_name());
    const auto dtype_it = info.find("dtype");
    if (dtype_it == info.end() || !dtype_it->is_string())
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' has no string 'dtype'", label, name);
    const std::string raw_dtype = dtype_it->get<std::string>();
    const StDType* st = find_dtype(raw_dtype);
    if (st == nullptr)
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' has unknown dtype '{}'", label, name,
                        raw_dtype);

    const auto shape_it = info.find("shape");
    if (shape_it == info.end() || !shape_it->is_array())
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' has no 'shape' array", label, name);
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    bool overflow = false;
    for (const auto& dim : *shape_it) {
      if (!dim.is_number_unsigned() || dim.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
        return make_error(ErrorCode::kCorrupt,
                          "{}: tensor '{}' shape {} must hold non-negative integers", label, name,
                          shape_it->dump());
      const uint64_t d = dim.get<uint64_t>();
      shape.push_back(static_cast<int64_t>(d));
      overflow = overflow || __builtin_mul_overflow(numel, d, &numel);
    }
    uint64_t need = 0;
    overflow = overflow || __builtin_mul_overflow(numel, static_cast<uint64_t>(st->size), &need);
    if (overflow)
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' shape {} overflows the byte count",
                        label, name, dims_string(shape));

    const auto off_it = info.find("data_offsets");
    if (off_it == info.end() || !off_it->is_array() || off_it->size() != 2 ||
        !(*off_it)[0].is_number_unsigned() || !(*off_it)[1].is_number_unsigned())
      return make_error(ErrorCode::kCorrupt,
                        "{}: tensor '{}' needs 'data_offsets' as two non-negative integers", label,
                        name);
    const uint64_t begin = (*off_it)[0].get<uint64_t>();
    const uint64_t end = (*off_it)[1].get<uint64_t>();
    if (begin > end)
      return make_error(ErrorCode::kCorrupt, "{}: tensor '{}' data_offsets [{}, {}) end before they begin",
                        label, name, begin, end);
    if (end > data.size())
      return make_error(ErrorCode::kCorrupt,
                        "{}: tensor '{}' data_offsets [{}, {}) exceed the data area ({} bytes)",
                        label, name, begin, end, data.size());
    if (end - begin != need)
      return make_error(ErrorCode::kCorrupt,
                        "{}: tensor '{}' data_offsets [{}, {}) hold {} bytes, but dtype {} and "
                        "shape {} need {}",
                        label, name, begin, end, end - begin, raw_dtype, dims_string(shape), need);

    TensorEntry entry;
    entry.name = name;
    entry.file = label;
    entry.raw_dtype = raw_dtype;
    entry.dtype = st->dtype;
    entry.shape = std::move(shape);
    entry.bytes = data.subspan(begin, end - begin);
    entries.push_back(std::move(entry));
    ranges.emplace_back(begin, end);
  }

  // No two tensors may share bytes (empty tensors occupy nothing).
  std::vector<size_t> order(entries.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ranges[a] < ranges[b]; });
  size_t prev = SIZE_MAX;
  for (size_t idx : order) {
    if (ranges[idx].first == ranges[idx].second) continue;
    if (prev != SIZE_MAX && ranges[idx].first < ranges[prev].second)
      return make_error(ErrorCode::kCorrupt,
                        "{}: tensors '{}' [{}, {}) and '{}' [{}, {}) overlap", label,
                        entries[prev].name, ranges[prev].first, ranges[prev].second,
                        entries[idx].name, ranges[idx].first, ranges[idx].second);
    if (prev == SIZE_MAX || ranges[idx].second > ranges[prev].second) prev = idx;
  }
  return entries;
}

Result<std::map<std::string, std::set<std::string>>> parse_safetensors_index(std::string_view text,
                                                                            const std::string& label) {
  KESTREL_ASSIGN_OR_RETURN(nlohmann::json index, parse_json_object(text, label));
  const auto map_it = index.find("weight_map");
  if (map_it == index.end() || !map_it->is_object())
    return make_error(ErrorCode::kCorrupt, "{}: missing object 'weight_map'", label);
  std::map<std::string, std::set<std::string>> shards;
  for (const auto& [name, file] : map_it->items()) {
    if (!file.is_string())
      return make_error(ErrorCode::kCorrupt, "{}: weight_map entry '{}' must be a file name, got {}", label, name,
                        file.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    const std::string file_name = file.get<std::string>();
    // The shards live next to the index: a path could read any file on the machine.
    if (file_name.empty() || file_name.find('/') != std::string::npos || file_name.find('\\') != std::string::npos ||
        file_name == "." || file_name == ".." || file_name.find('\0') != std::string::npos)
      return make_error(ErrorCode::kCorrupt, "{}: weight_map entry '{}' names '{}', which is not a plain file name",
                        label, name, file_name);
    shards[file_name].insert(name);
  }
  if (shards.empty()) return make_error(ErrorCode::kCorrupt, "{}: weight_map is empty", label);
  return shards;
}

}  // namespace kestrel::exporter::import
