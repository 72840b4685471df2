// Minimal leveled logging to stderr. KESTREL_LOG_LEVEL=debug|info|warn|error|off.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace kestrel {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3, kOff = 4 };

LogLevel log_level();
void set_log_level(LogLevel level);
void log_message(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (level < log_level()) return;
  log_message(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kestrel
