// Holds back streamed text that could still turn into a stop string.
#pragma once

#include <string>
#include <vector>

namespace kestrel::llm {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stop_strings) : stops_(std::move(stop_strings)) {}
  // Adds text; returns what is now safe to emit. After a match, `stopped()` is true and the
  // text before the stop string has been emitted.
  std::string push(const std::string& text);
  // Emits whatever was held back (no stop string can complete any more).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace kestrel::llm
