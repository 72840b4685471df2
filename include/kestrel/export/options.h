// Backend option tables: every backend declares the options it accepts, where each one goes
// (the partitioner or the compile-spec builder), its type, default and help text.
// Unknown names and wrong types are errors, never warnings.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "kestrel/core/result.h"

namespace kestrel::exporter {

// kRuntime: an option a backend takes when it runs (kestrel run --backend-option).
enum class OptionDestination { kPartitioner, kCompileSpec, kRuntime };
enum class OptionType { kBool, kInt, kString, kStringSet, kIntSet };

using OptionValue = std::variant<bool, int64_t, std::string, std::set<std::string>, std::set<int64_t>>;
using OptionMap = std::map<std::string, OptionValue>;

struct OptionSpec {
  std::string name;
  OptionDestination destination;
  OptionType type;
  OptionValue default_value;
  std::string help;
  std::vector<std::string> choices;  // for kString: allowed values (empty = any)
  int64_t min = INT64_MIN, max = INT64_MAX;  // for kInt
};

class OptionTable {
 public:
  explicit OptionTable(std::string backend, std::vector<OptionSpec> specs);
  const std::string& backend() const { return backend_; }
  const std::vector<OptionSpec>& specs() const { return specs_; }
  const OptionSpec* find(const std::string& name) const;

  // Parses "key=value" strings from the CLI by the declared type (bools: true/false/1/0;
  // sets: comma-separated).
  Result<OptionMap> parse_cli(const std::vector<std::string>& assignments) const;
  // Parses a JSON object of options (typed JSON values; sets as arrays).
  Result<OptionMap> parse_json(const nlohmann::json& object) const;
  // Checks names, types, choices and ranges; fills defaults. Error text names the option,
  // lists the valid names and the closest match for an unknown one.
  Result<OptionMap> resolve(const OptionMap& given) const;
  // Splits resolved options by destination.
  OptionMap for_destination(const OptionMap& resolved, OptionDestination destination) const;
  // A human table: name, destination, type, default, help.
  std::string format_table() const;

 private:
  std::string backend_;
  std::vector<OptionSpec> specs_;
};

std::string option_value_to_string(const OptionValue& value);
std::string option_type_name(OptionType type);
// Closest candidate by edit distance; empty when nothing is reasonably close.
std::string closest_match(const std::string& name, const std::vector<std::string>& candidates);

}  // namespace kestrel::exporter
