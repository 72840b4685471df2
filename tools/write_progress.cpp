#include "tools/write_progress.h"

#include <fmt/format.h>

#include <cstdio>

namespace kestrel::tools {

void WriteProgress::operator()(uint64_t written, uint64_t total) {
  const double mib = 1 << 20;
  const int percent = total == 0 ? 100 : static_cast<int>(written * 100 / total);
  const std::string text = fmt::format("writing {}: {:.1f} of {:.1f} MiB ({}%)", path_, static_cast<double>(written) / mib,
                                       static_cast<double>(total) / mib, percent);
  const bool done = written == total;
  if (in_place_) {
    const auto now = std::chrono::steady_clock::now();
    if (!done && now - last_draw_ < std::chrono::milliseconds(100)) return;
    last_draw_ = now;
    fmt::print(stderr, "\r{}{}", text, done ? "\n" : "");
  } else {
    if (percent / 10 == last_tenth_) return;
    last_tenth_ = percent / 10;
    fmt::print(stderr, "{}\n", text);
  }
  std::fflush(stderr);
}

}  // namespace kestrel::tools
