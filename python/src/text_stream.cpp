#include "text_stream.h"

#include <chrono>

#include "bindings.h"

namespace kestrel::python {

namespace {
// How often a waiting iterator looks for signals.
constexpr auto kSignalPoll = std::chrono::milliseconds(20);
// Pieces the worker may generate ahead of the consumer before it waits.
constexpr size_t kMaxPending = 16;
}  // namespace

TextStream::TextStream(py::object owner, RunnerCore& core, Request request, const GenerationSettings& settings)
    : owner_(std::move(owner)), core_(&core) {
  llm::GenerationConfig config = api::generation_config(settings);
  const uint64_t seed = config.sampler.seed;
  llm::Runner& runner = core_->acquire();
  config.on_token = [this](int64_t) { return !cancelled_.load(); };
  worker_ = std::thread([this, &runner, request = std::move(request), config = std::move(config), seed] {
    auto on_text = [this](const std::string& piece) {
      {
        std::unique_lock lock(mutex_);
        space_.wait(lock, [this] { return pieces_.size() < kMaxPending || cancelled_.load(); });
        pieces_.push_back(piece);
      }
      ready_.notify_one();
      return !cancelled_.load();
    };
    Result<Generation> outcome = request(runner, config, on_text);
    if (outcome.ok()) outcome->seed = seed;
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
    std::lock_guard lock(mutex_);  // the worker checks `cancelled_` under the lock before waiting
  }
  space_.notify_all();
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
        space_.notify_one();
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
