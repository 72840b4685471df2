#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "export/import/checkpoint_internal.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/core/file.h"

namespace kestrel::exporter::import {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    return make_error(err == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "cannot open '{}': {}",
                      path, std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return make_error(ErrorCode::kIo, "cannot stat '{}': {}", path, std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::kInvalidArgument, "'{}' is not a regular file", path);
  }
  std::unique_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* data = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      return make_error(ErrorCode::kIo, "cannot map '{}' ({} bytes): {}", path, file->size_,
                        std::strerror(err));
    }
    file->data_ = static_cast<const uint8_t*>(data);
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

Result<std::vector<uint8_t>> read_file_bytes(const std::string& path) {
  return kestrel::read_file_bytes(path, kMaxSmallFileBytes, "file");
}

}  // namespace kestrel::exporter::import
