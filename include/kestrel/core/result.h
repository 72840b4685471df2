// Errors as values: every fallible call returns Result<T> (or Status).
// No exception crosses the public API.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace kestrel {

enum class ErrorCode {
  kInvalidArgument,  // the caller passed something malformed
  kNotFound,         // a named thing (method, kernel, backend, tensor, key) does not exist
  kOutOfRange,       // an index, offset or size is outside its bounds
  kCorrupt,          // a file failed verification
  kUnsupported,      // valid, but not something this build can do
  kIo,               // the operating system refused (open, mmap, read, write)
  kCapacity,         // a request does not fit (context length, buffer size)
  kUnavailable,      // a backend or library cannot be used on this machine
  kInternal,         // a bug: an invariant did not hold
};

const char* error_code_name(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "corrupt: segment 3 ends at byte 9000, past the file end (8192)".
  std::string to_string() const;
  // Prepends context: Error(...).with_context("loading method 'decode'").
  Error with_context(const std::string& context) const;

 private:
  ErrorCode code_;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  Result(Error error) : state_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  const Error& error() const { return std::get<1>(state_); }

 private:
  std::variant<T, Error> state_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), has_error_(true) {}  // NOLINT

  bool ok() const { return !has_error_; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return error_; }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool has_error_ = false;
};

using Status = Result<void>;

inline Status ok_status() { return Status(); }

}  // namespace kestrel

#define KESTREL_CONCAT_INNER(a, b) a##b
#define KESTREL_CONCAT(a, b) KESTREL_CONCAT_INNER(a, b)

// Returns the error of a Status-returning expression from the enclosing function.
#define KESTREL_RETURN_IF_ERROR(expr)                         \
  do {                                                        \
    auto kestrel_status_ = (expr);                            \
    if (!kestrel_status_.ok()) return kestrel_status_.error(); \
  } while (0)

// KESTREL_ASSIGN_OR_RETURN(auto x, make_x()): binds the value or returns the error.
#define KESTREL_ASSIGN_OR_RETURN(lhs, expr) \
  KESTREL_ASSIGN_OR_RETURN_IMPL(KESTREL_CONCAT(kestrel_result_, __LINE__), lhs, expr)
#define KESTREL_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.error();                  \
  lhs = std::move(tmp).value()
