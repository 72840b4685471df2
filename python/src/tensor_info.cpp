#include "tensor_info.h"

#include <functional>
#include <numeric>

namespace kestrel::python {

TensorInfo tensor_info(const program::ValueSpec& value) {
  const int64_t numel = std::accumulate(value.shape.begin(), value.shape.end(), int64_t{1}, std::multiplies<>());
  const int64_t last = value.shape.empty() ? 1 : value.shape.back();
  auto bytes = dtype_storage_bytes(value.dtype, numel, last);  // verified at load, so it is known
  return {value.name, std::string(dtype_name(value.dtype)), value.shape, bytes.ok() ? *bytes : 0};
}

TensorInfo tensor_info(const runtime::TensorInfo& info) {
  return {info.name, std::string(dtype_name(info.dtype)), info.shape.to_vector(), info.nbytes};
}

}  // namespace kestrel::python
