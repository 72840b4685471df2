#include "kestrel/llm/stop_strings.h"

#include <algorithm>

namespace kestrel::llm {

std::string StopStringFilter::push(const std::string& text) {
  if (stopped_) return {};
  pending_ += text;
  size_t match = std::string::npos;
  for (const auto& stop : stops_)
    if (!stop.empty()) match = std::min(match, pending_.find(stop));
  if (match != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, match);
    pending_.clear();
    return out;
  }
  // Keep the longest suffix that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const auto& stop : stops_)
    for (size_t n = std::min(stop.size() - (stop.empty() ? 0 : 1), pending_.size()); n > keep; --n)
      if (pending_.compare(pending_.size() - n, n, stop, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopStringFilter::flush() {
  std::string out;
  out.swap(pending_);
  return stopped_ ? std::string() : out;
}

}  // namespace kestrel::llm
