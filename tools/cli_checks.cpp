#include "tools/cli_checks.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>

#include "kestrel/export/options.h"

namespace kestrel::tools {

namespace {

// Decimal digits only (an optional leading '-' for signed values): no base prefixes, no spaces.
template <typename T>
bool parse_decimal(const std::string& text, T& value) {
  if (text.empty() || text[0] == '+') return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, 10);
  return ec == std::errc() && ptr == end;
}

}  // namespace

CLI::Validator integer_in(int64_t min, int64_t max) {
  const std::string range = max == std::numeric_limits<int64_t>::max() ? fmt::format(">= {}", min)
                                                                        : fmt::format("in [{}, {}]", min, max);
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        int64_t value = 0;
        if (!parse_decimal(text, value) || value < min || value > max)
          return fmt::format("must be an integer {}, got '{}'", range, text);
        return {};
      },
      "INT " + range, "integer_in");
}

CLI::Validator unsigned_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        if (text.starts_with("-") || !parse_decimal(text, value))
          return fmt::format("must be an integer in [0, {}], got '{}'", std::numeric_limits<uint64_t>::max(), text);
        return {};
      },
      "UINT64", "unsigned_integer");
}

CLI::Validator non_empty_text() {
  return CLI::Validator([](std::string& text) -> std::string { return text.empty() ? "must not be empty" : ""; },
                        "TEXT (not empty)", "non_empty_text");
}

std::string unknown_command_message(const CLI::App& app, int argc, const char* const* argv) {
  if (argc < 2) return {};
  const std::string word = argv[1];
  if (word.empty() || word[0] == '-') return {};
  std::vector<std::string> names;
  for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (command->get_name() == word) return {};
    names.push_back(command->get_name());
  }
  const std::string closest = exporter::closest_match(word, names);
  return fmt::format("unknown command '{}' (commands: {}){}", word, fmt::join(names, ", "),
                     closest.empty() ? "" : fmt::format("; did you mean '{}'?", closest));
}

}  // namespace kestrel::tools
