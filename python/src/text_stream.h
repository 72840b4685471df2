// kestrel.TextStream: a request running on a worker thread whose text pieces the Python
// iterator hands out as they are generated. The worker never touches Python and runs at most
// a few pieces ahead of the consumer; the iterator waits with the GIL released and checks for
// signals (Ctrl-C) while it waits.
#pragma once

#include <pybind11/pybind11.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "runner_core.h"

namespace kestrel::python {

class TextStream {
 public:
  // Starts `request` with `settings` on a worker thread. `owner` is the Python runner whose
  // `core` it runs on: kept alive, and busy, until the stream ends (exhausted, closed or
  // collected).
  TextStream(py::object owner, RunnerCore& core, Request request, const GenerationSettings& settings);
  ~TextStream();
  TextStream(const TextStream&) = delete;
  TextStream& operator=(const TextStream&) = delete;

  // The next piece; raises StopIteration at the end, the request's error if it failed, or
  // the signal's exception (KeyboardInterrupt), which also stops the request.
  py::str next();
  // Stops the request after the current token and waits for it.
  void close();
  // The finished request (None until the stream has ended).
  const std::optional<Generation>& result() const { return result_; }

 private:
  // Joins the worker (GIL released) and frees the runner for other requests; returns the
  // request's outcome the first time, nullopt afterwards.
  std::optional<Result<Generation>> finish();

  py::object owner_;
  RunnerCore* core_;
  std::thread worker_;
  std::atomic<bool> cancelled_{false};
  std::mutex mutex_;
  std::condition_variable ready_;  // a piece or the outcome arrived
  std::condition_variable space_;  // the consumer took a piece, or the stream was closed
  std::deque<std::string> pieces_;               // guarded by mutex_
  std::optional<Result<Generation>> outcome_;    // guarded by mutex_; set when the worker is done
  bool finished_ = false;                        // joined (GIL)
  std::optional<Generation> result_;
};

}  // namespace kestrel::python
