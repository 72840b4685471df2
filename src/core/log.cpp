#include "kestrel/core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace kestrel {

namespace {
LogLevel level_from_env() {
  const char* env = std::getenv("KESTREL_LOG_LEVEL");
  if (env == nullptr) return LogLevel::kWarn;
  const std::string value(env);
  if (value == "debug") return LogLevel::kDebug;
  if (value == "info") return LogLevel::kInfo;
  if (value == "error") return LogLevel::kError;
  if (value == "off") return LogLevel::kOff;
  return LogLevel::kWarn;
}

std::atomic<LogLevel>& current_level() {
  static std::atomic<LogLevel> level{level_from_env()};
  return level;
}
}  // namespace

LogLevel log_level() { return current_level().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) { current_level().store(level, std::memory_order_relaxed); }

void log_message(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"debug", "info", "warn", "error"};
  std::fprintf(stderr, "kestrel %s: %.*s\n", kNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace kestrel
