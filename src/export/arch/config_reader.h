// Typed reads of one config.json object (or a nested object such as rope_scaling). Absent or
// null keys take the architecture's declared default (its ConfigField table) or an explicit
// fallback; reading a key the architecture did not declare is an internal error, so the table
// stays the complete list of what Kestrel reads. Errors name the file, the key and the value as
// written.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/architecture.h"

namespace kestrel::exporter {

class ConfigReader {
 public:
  // `source` labels errors ("config.json", "config.json: rope_scaling"). With `architecture`,
  // defaults come from its field table.
  ConfigReader(const nlohmann::json& object, std::string source, const Architecture* architecture = nullptr);

  const std::string& source() const { return source_; }
  const nlohmann::json& object() const { return object_; }

  // The value, or null when the key is absent or JSON null.
  const nlohmann::json* find(const std::string& key) const;
  bool has(const std::string& key) const { return find(key) != nullptr; }
  // The architecture's declared default for `key` (null when none or undeclared).
  nlohmann::json declared_default(const std::string& key) const;

  Result<int64_t> integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const;
  // An integer in [1, max]; values past the bound are reported as implausible.
  Result<int64_t> positive(const std::string& key, int64_t max, std::optional<int64_t> fallback = std::nullopt) const;
  Result<double> number(const std::string& key, std::optional<double> fallback = std::nullopt) const;
  Result<bool> boolean(const std::string& key, std::optional<bool> fallback = std::nullopt) const;
  Result<std::string> string(const std::string& key, std::optional<std::string> fallback = std::nullopt) const;
  // A list of numbers; `fallback` when absent.
  Result<std::vector<double>> numbers(const std::string& key) const;
  // An integer or a list of non-negative integers; empty when absent or null.
  Result<std::vector<int64_t>> token_ids(const std::string& key) const;

  // "<source>: <key> = <value as written> is not supported: <why>".
  Error unsupported(const std::string& key, const std::string& why) const;
  Error invalid(const std::string& key, const std::string& why) const;
  // Refuses the key unless it is absent, null or equal to `accepted`.
  Status refuse_unless(const std::string& key, const nlohmann::json& accepted, const std::string& why) const;

 private:
  // The value to use: the config's, else `fallback`, else the declared default; an error when
  // none exists (a missing required key, or a key the architecture never declared).
  Result<nlohmann::json> resolve(const std::string& key, const std::optional<nlohmann::json>& fallback) const;

  const nlohmann::json& object_;
  std::string source_;
  const Architecture* architecture_;
};

}  // namespace kestrel::exporter
