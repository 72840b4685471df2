#include "text_stream.h"

#include <chrono>

#include "bindings.h"

namespace kestrel::python {

namespace {
// How often a waiting iterator looks for signals.
constexpr auto kSignalPoll = std::chrono::milliseconds(20);
}  // namespace

TextStream::TextStream(py::object owner, RunnerCore& core, Job job) : owner_(std::move(owner)), core_(&core) {
  core_->acquire();
  worker_ = std::thread([this, job = std::move(job)] {
    auto on_text = [this](const std::string& piece) {
      {
        std::lock_guard lock(mutex_);
        pieces_.push_back(piece);
      }
      ready_.notify_one();
      return !cancelled_.load();
    };
    auto on_token = [this](int64_t) { return !cancelled_.load(); };
    Result<Generation> outcome = job(on_text, on_token);
    {
      std::lock_guard lock(mutex_);
      outcome_.emplace(std::move(outcome));
    }
    ready_.notify_one();
  });
}

TextStream::~TextStream() {
  cancelled_ = true;
  if (!finished_) {
    if (PyGILState_Check()) {
      finish();
    } else {
      py::gil_scoped_acquire gil;
      finish();
    }
  }
}

std::optional<Result<Generation>> TextStream::finish() {
  if (finished_) return std::nullopt;
  {
    py::gil_scoped_release release;
    worker_.join();
  }
  finished_ = true;
  core_->release();
  std::lock_guard lock(mutex_);
  return std::move(outcome_);
}

py::str TextStream::next() {
  while (true) {
    if (finished_) throw py::stop_iteration();
    std::optional<std::string> piece;
    bool done = false;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex_);
      ready_.wait_for(lock, kSignalPoll, [this] { return !pieces_.empty() || outcome_.has_value(); });
      if (!pieces_.empty()) {
        piece = std::move(pieces_.front());
        pieces_.pop_front();
      } else {
        done = outcome_.has_value();
      }
    }
    // A signal that arrived while waiting stops the request here, not in the caller's loop.
    if (PyErr_CheckSignals() != 0) {
      py::error_already_set interrupted;  // takes the handler's exception (KeyboardInterrupt)
      close();
      throw interrupted;
    }
    if (piece) return text(*piece);
    if (done) {
      auto outcome = finish();
      if (outcome) result_ = unwrap(std::move(*outcome));
      throw py::stop_iteration();
    }
  }
}

void TextStream::close() {
  cancelled_ = true;
  auto outcome = finish();
  if (outcome && outcome->ok()) result_ = std::move(*outcome).value();
  std::lock_guard lock(mutex_);
  pieces_.clear();
}

}  // namespace kestrel::python
