#include "kestrel/core/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "kestrel/core/error_helpers.h"

namespace kestrel {

namespace {

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

template <typename Container>
Result<Container> read_bounded(const std::string& path, uint64_t max_bytes, std::string_view what) {
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "cannot open {} '{}': {}", what, path,
                      std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    return make_error(ErrorCode::kIo, "cannot stat {} '{}': {}", what, path, std::strerror(errno));
  if (S_ISDIR(st.st_mode)) return make_error(ErrorCode::kInvalidArgument, "{} '{}' is a directory", what, path);
  const auto too_large = [&] {
    return make_error(ErrorCode::kCapacity, "{} '{}' is larger than the limit of {} bytes", what, path, max_bytes);
  };
  if (S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) > max_bytes) return too_large();

  Container out;
  if (S_ISREG(st.st_mode)) out.reserve(static_cast<size_t>(st.st_size));
  char chunk[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof(chunk));
    if (n < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::kIo, "cannot read {} '{}': {}", what, path, std::strerror(errno));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) return too_large();
    out.insert(out.end(), chunk, chunk + n);
  }
  return out;
}

}  // namespace

Result<std::string> read_file_text(const std::string& path, uint64_t max_bytes, std::string_view what) {
  return read_bounded<std::string>(path, max_bytes, what);
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path, uint64_t max_bytes, std::string_view what) {
  return read_bounded<std::vector<uint8_t>>(path, max_bytes, what);
}

}  // namespace kestrel
