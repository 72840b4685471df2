// The temporary file a program is written to before it replaces its destination. It is removed
// on every way out except a successful commit(): errors and exceptions (the destructor), and
// SIGINT, SIGTERM and SIGHUP (a handler unlinks every temporary file still open, then re-raises
// the signal so the process ends as it would have).
#pragma once

#include <string>

#include "kestrel/core/result.h"

namespace kestrel::program {

class TempFile {
 public:
  // Creates "<destination>.tmp.XXXXXX" (mode 0644) next to `destination`.
  static Result<TempFile> create(const std::string& destination);
  ~TempFile();
  TempFile(TempFile&& other) noexcept;
  TempFile& operator=(TempFile&&) = delete;
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // Flushes the file to disk, closes it and renames it over the destination.
  Status commit();

 private:
  TempFile(std::string destination, std::string path, int fd, int slot)
      : destination_(std::move(destination)), path_(std::move(path)), fd_(fd), slot_(slot) {}
  void discard();

  std::string destination_;
  std::string path_;
  int fd_ = -1;
  int slot_ = -1;  // the signal handler's record of this path; -1 when there was no free one
};

}  // namespace kestrel::program
