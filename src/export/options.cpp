#include "kestrel/export/options.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitution});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string join(const std::vector<std::string>& items, const char* separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += separator;
    out += items[i];
  }
  return out;
}

const char* destination_name(OptionDestination destination) {
  switch (destination) {
    case OptionDestination::kPartitioner: return "partitioner";
    case OptionDestination::kCompileSpec: return "compile_spec";
    case OptionDestination::kRuntime: return "runtime";
  }
  return "compile_spec";
}

// The variant alternative each declared type must hold.
size_t expected_index(OptionType type) {
  switch (type) {
    case OptionType::kBool: return 0;
    case OptionType::kInt: return 1;
    case OptionType::kString: return 2;
    case OptionType::kStringSet: return 3;
    case OptionType::kIntSet: return 4;
  }
  return 0;
}

const char* held_type_name(const OptionValue& value) {
  switch (value.index()) {
    case 0: return "bool";
    case 1: return "int";
    case 2: return "string";
    case 3: return "string set";
    case 4: return "int set";
  }
  return "?";
}

std::optional<int64_t> parse_int(std::string_view text) {
  text = trim(text);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  if (text.empty()) return std::nullopt;
  int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

std::vector<std::string_view> split_commas(std::string_view text) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view part = trim(text.substr(start, comma - start));
    if (!part.empty()) parts.push_back(part);
    start = comma + 1;
  }
  return parts;
}

Error type_error(const OptionTable& table, const OptionSpec& spec, const std::string& given) {
  return make_error(ErrorCode::kInvalidArgument, "option '{}' of backend '{}' expects {}, got {}",
                    spec.name, table.backend(), option_type_name(spec.type), given);
}

Result<OptionValue> parse_text(const OptionTable& table, const OptionSpec& spec, std::string_view text) {
  const std::string quoted = fmt::format("'{}'", text);
  switch (spec.type) {
    case OptionType::kBool: {
      std::string lower = to_lower(trim(text));
      if (lower == "true" || lower == "1") return OptionValue(true);
      if (lower == "false" || lower == "0") return OptionValue(false);
      return type_error(table, spec, quoted + " (use true, false, 1 or 0)");
    }
    case OptionType::kInt: {
      auto value = parse_int(text);
      if (!value) return type_error(table, spec, quoted);
      return OptionValue(*value);
    }
    case OptionType::kString: return OptionValue(std::string(text));
    case OptionType::kStringSet: {
      std::set<std::string> items;
      for (std::string_view part : split_commas(text)) items.emplace(part);
      return OptionValue(std::move(items));
    }
    case OptionType::kIntSet: {
      std::set<int64_t> items;
      for (std::string_view part : split_commas(text)) {
        auto value = parse_int(part);
        if (!value)
          return type_error(table, spec, fmt::format("{} ('{}' is not an integer)", quoted, part));
        items.insert(*value);
      }
      return OptionValue(std::move(items));
    }
  }
  return make_error(ErrorCode::kInternal, "option '{}' has an unknown type", spec.name);
}

Result<OptionValue> parse_json_value(const OptionTable& table, const OptionSpec& spec,
                                     const nlohmann::json& value) {
  auto bad = [&] { return type_error(table, spec, fmt::format("{} (JSON {})", value.dump(), value.type_name())); };
  auto as_int = [](const nlohmann::json& v) -> std::optional<int64_t> {
    if (v.is_number_unsigned()) {
      auto u = v.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
      return static_cast<int64_t>(u);
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    return std::nullopt;
  };
  switch (spec.type) {
    case OptionType::kBool:
      if (!value.is_boolean()) return bad();
      return OptionValue(value.get<bool>());
    case OptionType::kInt: {
      auto i = as_int(value);
      if (!i) return bad();
      return OptionValue(*i);
    }
    case OptionType::kString:
      if (!value.is_string()) return bad();
      return OptionValue(value.get<std::string>());
    case OptionType::kStringSet: {
      if (!value.is_array()) return bad();
      std::set<std::string> items;
      for (const auto& item : value) {
        if (!item.is_string()) return bad();
        items.insert(item.get<std::string>());
      }
      return OptionValue(std::move(items));
    }
    case OptionType::kIntSet: {
      if (!value.is_array()) return bad();
      std::set<int64_t> items;
      for (const auto& item : value) {
        auto i = as_int(item);
        if (!i) return bad();
        items.insert(*i);
      }
      return OptionValue(std::move(items));
    }
  }
  return make_error(ErrorCode::kInternal, "option '{}' has an unknown type", spec.name);
}

std::vector<std::string> spec_names(const OptionTable& table) {
  std::vector<std::string> names;
  for (const auto& spec : table.specs()) names.push_back(spec.name);
  return names;
}

Error unknown_option(const OptionTable& table, const std::string& name) {
  std::vector<std::string> names = spec_names(table);
  std::string suggestion = closest_match(name, names);
  std::string hint = suggestion.empty() ? "" : fmt::format("; did you mean '{}'?", suggestion);
  std::vector<std::string> sorted = names;
  std::sort(sorted.begin(), sorted.end());
  return make_error(ErrorCode::kInvalidArgument, "unknown option '{}' for backend '{}'{} valid options: {}",
                    name, table.backend(), hint.empty() ? ";" : hint, sorted.empty() ? "(none)" : join(sorted));
}

Status check_value(const OptionTable& table, const OptionSpec& spec, const OptionValue& value) {
  if (value.index() != expected_index(spec.type))
    return type_error(table, spec,
                      fmt::format("'{}' ({})", option_value_to_string(value), held_type_name(value)));
  auto check_choice = [&](const std::string& s) -> Status {
    if (spec.choices.empty() ||
        std::find(spec.choices.begin(), spec.choices.end(), s) != spec.choices.end())
      return ok_status();
    std::string suggestion = closest_match(s, spec.choices);
    return make_error(ErrorCode::kInvalidArgument, "option '{}' of backend '{}' got '{}'{}; choices: {}",
                      spec.name, table.backend(), s,
                      suggestion.empty() ? "" : fmt::format(" (did you mean '{}'?)", suggestion),
                      join(spec.choices));
  };
  auto check_range = [&](int64_t v) -> Status {
    if (v >= spec.min && v <= spec.max) return ok_status();
    return make_error(ErrorCode::kOutOfRange, "option '{}' of backend '{}' got {}, outside [{}, {}]", spec.name,
                      table.backend(), v, spec.min, spec.max);
  };
  // Choices and ranges also apply to each element of a set.
  switch (spec.type) {
    case OptionType::kString: return check_choice(std::get<std::string>(value));
    case OptionType::kStringSet:
      for (const auto& s : std::get<std::set<std::string>>(value)) KESTREL_RETURN_IF_ERROR(check_choice(s));
      return ok_status();
    case OptionType::kInt: return check_range(std::get<int64_t>(value));
    case OptionType::kIntSet:
      for (int64_t v : std::get<std::set<int64_t>>(value)) KESTREL_RETURN_IF_ERROR(check_range(v));
      return ok_status();
    case OptionType::kBool: return ok_status();
  }
  return ok_status();
}

}  // namespace

OptionTable::OptionTable(std::string backend, std::vector<OptionSpec> specs)
    : backend_(std::move(backend)), specs_(std::move(specs)) {}

const OptionSpec* OptionTable::find(const std::string& name) const {
  for (const auto& spec : specs_)
    if (spec.name == name) return &spec;
  return nullptr;
}

Result<OptionMap> OptionTable::parse_cli(const std::vector<std::string>& assignments) const {
  OptionMap result;
  for (const std::string& assignment : assignments) {
    size_t eq = assignment.find('=');
    if (eq == std::string::npos)
      return make_error(ErrorCode::kInvalidArgument, "option '{}' for backend '{}' must have the form key=value",
                        assignment, backend_);
    std::string key(trim(std::string_view(assignment).substr(0, eq)));
    std::string_view text = std::string_view(assignment).substr(eq + 1);
    const OptionSpec* spec = find(key);
    if (!spec) return unknown_option(*this, key);
    if (result.count(key))
      return make_error(ErrorCode::kInvalidArgument, "option '{}' for backend '{}' is given twice", key,
                        backend_);
    KESTREL_ASSIGN_OR_RETURN(OptionValue value, parse_text(*this, *spec, text));
    result.emplace(key, std::move(value));
  }
  return result;
}

Result<OptionMap> OptionTable::parse_json(const nlohmann::json& object) const {
  if (!object.is_object())
    return make_error(ErrorCode::kInvalidArgument, "options for backend '{}' must be a JSON object, got {}",
                      backend_, object.type_name());
  OptionMap result;
  for (auto it = object.begin(); it != object.end(); ++it) {
    const OptionSpec* spec = find(it.key());
    if (!spec) return unknown_option(*this, it.key());
    KESTREL_ASSIGN_OR_RETURN(OptionValue value, parse_json_value(*this, *spec, it.value()));
    result.emplace(it.key(), std::move(value));
  }
  return result;
}

Result<OptionMap> OptionTable::resolve(const OptionMap& given) const {
  std::set<std::string> declared;
  for (const auto& spec : specs_) {
    if (!declared.insert(spec.name).second)
      return make_error(ErrorCode::kInternal, "backend '{}' declares option '{}' twice", backend_, spec.name);
    if (spec.default_value.index() != expected_index(spec.type))
      return make_error(ErrorCode::kInternal, "backend '{}' declares option '{}' as {} with a {} default",
                        backend_, spec.name, option_type_name(spec.type), held_type_name(spec.default_value));
  }
  OptionMap resolved;
  for (const auto& [name, value] : given) {
    const OptionSpec* spec = find(name);
    if (!spec) return unknown_option(*this, name);
    KESTREL_RETURN_IF_ERROR(check_value(*this, *spec, value));
    resolved.emplace(name, value);
  }
  for (const auto& spec : specs_)
    if (!resolved.count(spec.name)) resolved.emplace(spec.name, spec.default_value);
  return resolved;
}

OptionMap OptionTable::for_destination(const OptionMap& resolved, OptionDestination destination) const {
  OptionMap out;
  for (const auto& [name, value] : resolved) {
    const OptionSpec* spec = find(name);
    if (spec && spec->destination == destination) out.emplace(name, value);
  }
  return out;
}

std::string OptionTable::format_table() const {
  std::vector<std::array<std::string, 5>> rows;
  rows.push_back({"name", "destination", "type", "default", "help"});
  for (const auto& spec : specs_) {
    std::string def = option_value_to_string(spec.default_value);
    if (def.empty()) def.push_back('-');
    std::string help = spec.help;
    if (!spec.choices.empty()) help += fmt::format(" (one of: {})", join(spec.choices));
    if ((spec.type == OptionType::kInt || spec.type == OptionType::kIntSet) &&
        (spec.min != INT64_MIN || spec.max != INT64_MAX)) {
      help += fmt::format(" (range {}..{})", spec.min == INT64_MIN ? std::string("") : std::to_string(spec.min),
                          spec.max == INT64_MAX ? std::string("") : std::to_string(spec.max));
    }
    rows.push_back({spec.name, destination_name(spec.destination), option_type_name(spec.type), def, help});
  }
  std::array<size_t, 4> width{};
  for (const auto& row : rows)
    for (size_t c = 0; c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (size_t c = 0; c < width.size(); ++c) {
      line += row[c];
      line.append(width[c] - row[c].size() + 2, ' ');
    }
    line += row[4];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

std::string option_value_to_string(const OptionValue& value) {
  switch (value.index()) {
    case 0: return std::get<bool>(value) ? "true" : "false";
    case 1: return std::to_string(std::get<int64_t>(value));
    case 2: return std::get<std::string>(value);
    case 3: {
      const auto& items = std::get<std::set<std::string>>(value);
      return join(std::vector<std::string>(items.begin(), items.end()), ",");
    }
    case 4: {
      std::vector<std::string> items;
      for (int64_t v : std::get<std::set<int64_t>>(value)) items.push_back(std::to_string(v));
      return join(items, ",");
    }
  }
  return "";
}

std::string option_type_name(OptionType type) {
  switch (type) {
    case OptionType::kBool: return "bool";
    case OptionType::kInt: return "int";
    case OptionType::kString: return "string";
    case OptionType::kStringSet: return "string set";
    case OptionType::kIntSet: return "int set";
  }
  return "?";
}

std::string closest_match(const std::string& name, const std::vector<std::string>& candidates) {
  const std::string lowered = to_lower(name);
  std::string best;
  size_t best_distance = std::numeric_limits<size_t>::max();
  for (const auto& candidate : candidates) {
    size_t d = levenshtein(lowered, to_lower(candidate));
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  if (best.empty()) return "";
  // Reasonably close: at most a third of the name's length edited (at least one edit allowed),
  // and never a rewrite of the whole name.
  const size_t allowed = std::max<size_t>(1, std::max(lowered.size(), best.size()) / 3);
  if (best_distance > allowed || best_distance >= std::max(lowered.size(), size_t{1})) return "";
  return best;
}

}  // namespace kestrel::exporter
