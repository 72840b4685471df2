// The writer streams segments from their sources: the bytes equal those of held segments, a
// failure at any point (an error, a wrong size, an exception, SIGTERM/SIGINT) leaves the
// destination untouched and no temporary file behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <new>

#include "kestrel/core/error_helpers.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"
#include "program/program_builders.h"

namespace kestrel::program {
namespace {

using testing::TempDir;

// Produces `bytes` in chunks of `chunk` bytes; optionally fails, lies about its size, throws or
// raises a signal after `after` bytes.
class TestSource final : public ByteSource {
 public:
  enum class Fault { kNone, kError, kShort, kLong, kThrow, kSignal };
  TestSource(std::vector<uint8_t> bytes, size_t chunk, Fault fault = Fault::kNone, size_t after = 0, int signal = 0)
      : bytes_(std::move(bytes)), chunk_(chunk), fault_(fault), after_(after), signal_(signal) {}

  uint64_t size() const override { return bytes_.size(); }
  Status write_to(const ByteSink& sink) const override {
    for (size_t at = 0; at < bytes_.size(); at += chunk_) {
      if (at >= after_) {
        switch (fault_) {
          case Fault::kError: return make_error(ErrorCode::kIo, "the source broke at byte {}", at);
          case Fault::kShort: return ok_status();
          case Fault::kThrow: throw std::bad_alloc();
          case Fault::kSignal: ::raise(signal_); break;
          default: break;
        }
      }
      KESTREL_RETURN_IF_ERROR(sink({bytes_.data() + at, std::min(chunk_, bytes_.size() - at)}));
    }
    if (fault_ == Fault::kLong) {
      const uint8_t extra = 0;
      return sink({&extra, 1});
    }
    return ok_status();
  }

 private:
  std::vector<uint8_t> bytes_;
  size_t chunk_;
  Fault fault_;
  size_t after_;
  int signal_;
};

// The small program with its constant segment streamed (the constant's 96 bytes, then padding
// to a larger segment) by a source.
ProgramSpec streamed_program(TestSource::Fault fault = TestSource::Fault::kNone, size_t after = 0, int signal = 0) {
  ProgramSpec spec = testing::small_program();
  spec.segments[0] = Segment(std::make_shared<const TestSource>(testing::pattern(4096, 3), 7, fault, after, signal));
  return spec;
}

std::vector<std::string> directory_entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST(ProgramStreamedWriter, StreamedSegmentsGiveTheBytesOfHeldOnes) {
  TempDir dir("streamed_same");
  ProgramSpec held = testing::small_program();
  held.segments[0] = testing::pattern(4096, 3);
  auto expected = serialize_program(held);
  ASSERT_TRUE(expected.ok()) << expected.error().to_string();

  const ProgramSpec streamed = streamed_program();
  ASSERT_TRUE(write_program(streamed, dir.file("p.kst")).ok());
  EXPECT_EQ(testing::read_bytes(dir.file("p.kst")), *expected);
  auto in_memory = serialize_program(streamed);
  ASSERT_TRUE(in_memory.ok());
  EXPECT_EQ(*in_memory, *expected);
  EXPECT_TRUE(LoadedProgram::load_file(dir.file("p.kst")).ok());
}

TEST(ProgramStreamedWriter, ProgressCountsUpToTheFileSize) {
  TempDir dir("streamed_progress");
  std::vector<std::pair<uint64_t, uint64_t>> calls;
  WriteOptions options;
  options.progress = [&](uint64_t written, uint64_t total) { calls.emplace_back(written, total); };
  ASSERT_TRUE(write_program(streamed_program(), dir.file("p.kst"), options).ok());
  const uint64_t size = std::filesystem::file_size(dir.file("p.kst"));
  ASSERT_GT(calls.size(), 4096u / 7);  // at least one call per chunk
  for (size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(calls[i].second, size);
    if (i > 0) {
      EXPECT_GT(calls[i].first, calls[i - 1].first);
    }
  }
  EXPECT_EQ(calls.back().first, size);
}

TEST(ProgramStreamedWriter, FailureMidWriteLeavesTheDestinationAndNoTemporary) {
  using Fault = TestSource::Fault;
  const struct {
    Fault fault;
    ErrorCode code;
    const char* message;
  } cases[] = {
      {Fault::kError, ErrorCode::kIo, "writing segment 0 (constants): the source broke at byte 2002"},
      {Fault::kShort, ErrorCode::kInternal, "segment 0 (constants): its source produced 2002 bytes of the 4096 it declared"},
      {Fault::kLong, ErrorCode::kInternal, "its source produced more than the 4096 bytes it declared"},
      {Fault::kThrow, ErrorCode::kCapacity, "out of memory"},
  };
  for (const auto& c : cases) {
    TempDir dir("streamed_failure");
    const std::string path = dir.file("p.kst");
    testing::write_bytes(path, testing::text_bytes("the previous program"));
    auto status = write_program(streamed_program(c.fault, 2000), path);
    ASSERT_FALSE(status.ok());
    EXPECT_EQ(status.error().code(), c.code) << status.error().to_string();
    EXPECT_NE(status.error().message().find(c.message), std::string::npos) << status.error().message();
    EXPECT_NE(status.error().message().find(path), std::string::npos) << status.error().message();
    EXPECT_EQ(testing::read_bytes(path), testing::text_bytes("the previous program"));
    EXPECT_EQ(directory_entries(dir.path()), std::vector<std::string>{"p.kst"});
  }
}

// A signal in the middle of a write: the process ends by that signal, and neither the temporary
// file nor the destination exists. Runs in a child process.
void expect_signal_removes_the_temporary(int signal) {
  TempDir dir(fmt::format("streamed_signal_{}", signal));
  const std::string path = dir.file("p.kst");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    (void)write_program(streamed_program(TestSource::Fault::kSignal, 2000, signal), path);
    ::_exit(3);  // not reached when the signal ends the process
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status)) << "exit status " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), signal);
  EXPECT_TRUE(directory_entries(dir.path()).empty()) << directory_entries(dir.path()).front();
}

TEST(ProgramStreamedWriter, SigtermMidWriteRemovesTheTemporary) { expect_signal_removes_the_temporary(SIGTERM); }
TEST(ProgramStreamedWriter, SigintMidWriteRemovesTheTemporary) { expect_signal_removes_the_temporary(SIGINT); }

TEST(ProgramStreamedWriter, IgnoredSignalsStayIgnored) {
  TempDir dir("streamed_ignored");
  const std::string path = dir.file("p.kst");
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGTERM, SIG_IGN);
    const bool ok = write_program(streamed_program(TestSource::Fault::kSignal, 2000, SIGTERM), path).ok();
    struct sigaction after {};
    ::sigaction(SIGTERM, nullptr, &after);
    ::_exit(ok && after.sa_handler == SIG_IGN ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(directory_entries(dir.path()), std::vector<std::string>{"p.kst"});
}

TEST(ProgramStreamedWriter, DefaultActionsAreRestoredAfterTheWrite) {
  TempDir dir("streamed_restored");
  ASSERT_TRUE(write_program(streamed_program(), dir.file("p.kst")).ok());
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction action {};
    ASSERT_EQ(::sigaction(signal, nullptr, &action), 0);
    EXPECT_EQ(action.sa_handler, SIG_DFL) << signal;
  }
}

}  // namespace
}  // namespace kestrel::program
