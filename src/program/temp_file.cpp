#include "program/temp_file.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <utility>

#include "kestrel/core/error_helpers.h"

namespace kestrel::program {

namespace {

// The paths the signal handler removes. A handler may only call async-signal-safe functions, so
// the paths live in fixed buffers, published through an atomic state, never in a std::string.
constexpr int kFree = 0, kFilling = 1, kReady = 2;
struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};
constexpr int kSlots = 8;
Slot g_slots[kSlots];

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kSignalCount = sizeof(kSignals) / sizeof(kSignals[0]);
std::mutex g_mutex;                      // guards the three below
int g_open = 0;                          // temporary files currently recorded
bool g_installed[kSignalCount] = {};     // our handler replaced the default action
struct sigaction g_previous[kSignalCount];

extern "C" void remove_temp_files_and_reraise(int signal) {
  const int saved_errno = errno;
  for (Slot& slot : g_slots)
    if (slot.state.load(std::memory_order_acquire) == kReady) ::unlink(slot.path);
  // Back to the default action, then re-raise: the signal is blocked while its handler runs, so
  // it is delivered as soon as this returns and ends the process as it would have.
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(signal, &action, nullptr);
  ::raise(signal);
  errno = saved_errno;
}

// Records `path` for the handler and installs it (only over a default action: a program that
// handles or ignores these signals itself keeps its own behaviour). Returns the slot, or -1 when
// every slot is taken (the file is then removed on errors but not on signals).
int record(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  int slot = -1;
  for (int i = 0; i < kSlots && slot < 0; ++i) {
    int expected = kFree;
    if (g_slots[i].state.compare_exchange_strong(expected, kFilling)) slot = i;
  }
  if (slot < 0) return -1;
  std::memcpy(g_slots[slot].path, path.c_str(), path.size() + 1);
  g_slots[slot].state.store(kReady, std::memory_order_release);

  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_open++ == 0) {
    for (int k = 0; k < kSignalCount; ++k) {
      struct sigaction previous {};
      if (::sigaction(kSignals[k], nullptr, &previous) != 0) continue;
      if ((previous.sa_flags & SA_SIGINFO) != 0 || previous.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = remove_temp_files_and_reraise;
      sigemptyset(&action.sa_mask);
      if (::sigaction(kSignals[k], &action, &g_previous[k]) == 0) g_installed[k] = true;
    }
  }
  return slot;
}

void forget(int slot) {
  if (slot < 0) return;
  g_slots[slot].state.store(kFree, std::memory_order_release);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_open == 0) {
    for (int k = 0; k < kSignalCount; ++k) {
      if (!g_installed[k]) continue;
      ::sigaction(kSignals[k], &g_previous[k], nullptr);
      g_installed[k] = false;
    }
  }
}

// Blocks the cleanup signals for its lifetime, so none arrives between creating a file and
// recording its path.
class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int signal : kSignals) sigaddset(&set, signal);
    pthread_sigmask(SIG_BLOCK, &set, &previous_);
  }
  ~SignalsBlocked() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t previous_;
};

Error io_error(const std::string& what, const std::string& path, int error) {
  return make_error(ErrorCode::kIo, "{} '{}': {}", what, path, std::strerror(error));
}

}  // namespace

Result<TempFile> TempFile::create(const std::string& destination) {
  std::string path = destination + ".tmp.XXXXXX";
  SignalsBlocked blocked;
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return io_error("cannot create a temporary file next to", destination, errno);
  TempFile file(destination, path, fd, record(path));
  if (::fchmod(fd, 0644) != 0) return io_error("cannot set permissions of", path, errno);
  return Result<TempFile>(std::move(file));
}

TempFile::TempFile(TempFile&& other) noexcept
    : destination_(std::move(other.destination_)),
      path_(std::move(other.path_)),
      fd_(std::exchange(other.fd_, -1)),
      slot_(std::exchange(other.slot_, -1)) {}

TempFile::~TempFile() { discard(); }

void TempFile::discard() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(path_.c_str());
  fd_ = -1;
  forget(std::exchange(slot_, -1));
}

Status TempFile::commit() {
  if (fd_ < 0) return make_error(ErrorCode::kInternal, "temporary file '{}' is already closed", path_);
  if (::fsync(fd_) != 0) {
    const int error = errno;
    discard();
    return io_error("cannot flush", path_, error);
  }
  const int fd = std::exchange(fd_, -1);
  if (::close(fd) != 0) {
    const int error = errno;
    ::unlink(path_.c_str());
    forget(std::exchange(slot_, -1));
    return io_error("cannot close", path_, error);
  }
  if (::rename(path_.c_str(), destination_.c_str()) != 0) {
    const int error = errno;
    ::unlink(path_.c_str());
    forget(std::exchange(slot_, -1));
    return io_error("cannot rename the temporary file to", destination_, error);
  }
  forget(std::exchange(slot_, -1));
  return ok_status();
}

}  // namespace kestrel::program
