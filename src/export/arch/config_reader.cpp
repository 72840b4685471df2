#include "export/arch/config_reader.h"

#include <cstdint>
#include <limits>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

using nlohmann::json;

ConfigReader::ConfigReader(const json& object, std::string source, const Architecture* architecture)
    : object_(object), source_(std::move(source)), architecture_(architecture) {}

const json* ConfigReader::find(const std::string& key) const {
  if (!object_.is_object()) return nullptr;
  const auto it = object_.find(key);
  return it == object_.end() || it->is_null() ? nullptr : &*it;
}

json ConfigReader::declared_default(const std::string& key) const {
  if (architecture_ != nullptr)
    for (const ConfigField& field : architecture_->fields)
      if (field.key == key) return field.fallback;
  return json();
}

Result<json> ConfigReader::resolve(const std::string& key, const std::optional<json>& fallback) const {
  const ConfigField* declared = nullptr;
  if (architecture_ != nullptr) {
    for (const ConfigField& field : architecture_->fields)
      if (field.key == key) declared = &field;
    if (declared == nullptr)
      return make_error(ErrorCode::kInternal, "architecture {} reads config key '{}' without declaring it",
                        architecture_->name, key);
  }
  if (const json* value = find(key)) return *value;
  if (fallback) return *fallback;
  if (declared != nullptr && !declared->fallback.is_null()) return declared->fallback;
  return make_error(ErrorCode::kInvalidArgument, "{}: missing key '{}'", source_, key);
}

Result<int64_t> ConfigReader::integer(const std::string& key, std::optional<int64_t> fallback) const {
  KESTREL_ASSIGN_OR_RETURN(json value, resolve(key, fallback ? std::optional<json>(*fallback) : std::nullopt));
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' = {} does not fit in a 64-bit integer", source_,
                      key, value.dump());
  if (!value.is_number_integer())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be an integer, got {}", source_, key,
                      value.dump());
  return value.get<int64_t>();
}

Result<int64_t> ConfigReader::positive(const std::string& key, int64_t max, std::optional<int64_t> fallback) const {
  KESTREL_ASSIGN_OR_RETURN(int64_t value, integer(key, fallback));
  if (value <= 0)
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be positive, got {}", source_, key, value);
  if (value > max)
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' = {} is implausibly large (at most {})", source_,
                      key, value, max);
  return value;
}

Result<double> ConfigReader::number(const std::string& key, std::optional<double> fallback) const {
  KESTREL_ASSIGN_OR_RETURN(json value, resolve(key, fallback ? std::optional<json>(*fallback) : std::nullopt));
  if (!value.is_number())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a number, got {}", source_, key,
                      value.dump());
  return value.get<double>();
}

Result<bool> ConfigReader::boolean(const std::string& key, std::optional<bool> fallback) const {
  KESTREL_ASSIGN_OR_RETURN(json value, resolve(key, fallback ? std::optional<json>(*fallback) : std::nullopt));
  if (!value.is_boolean())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be true or false, got {}", source_, key,
                      value.dump());
  return value.get<bool>();
}

Result<std::string> ConfigReader::string(const std::string& key, std::optional<std::string> fallback) const {
  KESTREL_ASSIGN_OR_RETURN(json value, resolve(key, fallback ? std::optional<json>(*fallback) : std::nullopt));
  if (!value.is_string())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a string, got {}", source_, key,
                      value.dump());
  return value.get<std::string>();
}

Result<std::vector<double>> ConfigReader::numbers(const std::string& key) const {
  KESTREL_ASSIGN_OR_RETURN(json value, resolve(key, std::nullopt));
  std::vector<double> out;
  if (!value.is_array())
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a list of numbers, got {}", source_, key,
                      value.dump());
  for (const json& item : value) {
    if (!item.is_number())
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be a list of numbers, got {}", source_,
                        key, item.dump());
    out.push_back(item.get<double>());
  }
  return out;
}

Result<std::vector<int64_t>> ConfigReader::token_ids(const std::string& key) const {
  std::vector<int64_t> ids;
  const json* value = find(key);
  if (value == nullptr) return ids;
  const auto bad = [&] {
    return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' must be an integer or a list of integers, got {}",
                      source_, key, value->dump());
  };
  const auto add = [&](const json& id) -> Status {
    if (!id.is_number_integer() ||
        (id.is_number_unsigned() && id.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)))
      return bad();
    if (id.get<int64_t>() < 0)
      return make_error(ErrorCode::kInvalidArgument, "{}: key '{}' holds a negative id {}", source_, key, id.dump());
    ids.push_back(id.get<int64_t>());
    return ok_status();
  };
  if (value->is_array()) {
    for (const json& id : *value) KESTREL_RETURN_IF_ERROR(add(id));
  } else if (value->is_number()) {
    KESTREL_RETURN_IF_ERROR(add(*value));
  } else {
    return bad();
  }
  return ids;
}

Error ConfigReader::unsupported(const std::string& key, const std::string& why) const {
  const json* value = find(key);
  return make_error(ErrorCode::kUnsupported, "{}: {} = {} is not supported: {}", source_, key,
                    value != nullptr ? value->dump() : std::string("null"), why);
}

Error ConfigReader::invalid(const std::string& key, const std::string& why) const {
  const json* value = find(key);
  return make_error(ErrorCode::kInvalidArgument, "{}: {} = {} is invalid: {}", source_, key,
                    value != nullptr ? value->dump() : std::string("null"), why);
}

Status ConfigReader::refuse_unless(const std::string& key, const json& accepted, const std::string& why) const {
  if (architecture_ != nullptr) KESTREL_RETURN_IF_ERROR(resolve(key, json()));
  const json* value = find(key);
  if (value == nullptr || *value == accepted) return ok_status();
  // 1 and 1.0 are the same factor.
  if (value->is_number() && accepted.is_number() && value->get<double>() == accepted.get<double>())
    return ok_status();
  return unsupported(key, why);
}

}  // namespace kestrel::exporter
