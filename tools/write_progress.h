// Progress of a long program write on stderr: one line updated in place on a terminal, or (when
// asked for with --progress) a line per tenth of the file elsewhere.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace kestrel::tools {

class WriteProgress {
 public:
  // `in_place`: redraw one line (a terminal); otherwise print whole lines.
  WriteProgress(std::string path, bool in_place) : path_(std::move(path)), in_place_(in_place) {}
  void operator()(uint64_t written, uint64_t total);

 private:
  std::string path_;
  bool in_place_;
  int last_tenth_ = -1;
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace kestrel::tools
