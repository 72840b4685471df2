#include "kestrel/core/result.h"

namespace kestrel {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kOutOfRange: return "out of range";
    case ErrorCode::kCorrupt: return "corrupt";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kIo: return "i/o error";
    case ErrorCode::kCapacity: return "capacity";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown error";
}

std::string Error::to_string() const { return std::string(error_code_name(code_)) + ": " + message_; }

Error Error::with_context(const std::string& context) const {
  return Error(code_, context + ": " + message_);
}

}  // namespace kestrel
