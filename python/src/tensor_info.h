// The Python-side description of one tensor (program I/O, allocator requests).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/program/spec.h"
#include "kestrel/runtime/method.h"

namespace kestrel::python {

struct TensorInfo {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  size_t nbytes = 0;
};

TensorInfo tensor_info(const program::ValueSpec& value);
TensorInfo tensor_info(const runtime::TensorInfo& info);

}  // namespace kestrel::python
