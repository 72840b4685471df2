// Short constructors for errors whose message is built with fmt.
#pragma once

#include <fmt/format.h>

#include "kestrel/core/result.h"

namespace kestrel {

template <typename... Args>
Error make_error(ErrorCode code, fmt::format_string<Args...> format, Args&&... args) {
  return Error(code, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace kestrel
