// The hook through which rpcmem buffers are registered with QNN contexts. The SDK delegate
// implements it (QnnMem_register / QnnMem_deRegister); host tests use a recording one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/runtime/method.h"

namespace kestrel::qnn {

// Identifies one QNN context for the lifetime of the process. Ids are never reused, so a
// stale registration of a destroyed context can never be mistaken for a new one.
using QnnContextId = uint64_t;
// What the registrar hands back for one registration (a Qnn_MemHandle_t in the SDK delegate).
using QnnMemHandle = uint64_t;

// One tensor inside an rpcmem allocation: a shared buffer described by fd + offset.
struct QnnMemRegion {
  void* address = nullptr;  // what the tensor points at
  void* base = nullptr;     // raw base returned by rpcmem
  int fd = -1;              // rpcmem_to_fd(base)
  size_t offset = 0;        // address - base
  size_t bytes = 0;         // bytes of the tensor
  size_t total = 0;         // bytes of the whole allocation
  runtime::TensorInfo info; // name, dtype, shape of the tensor it was allocated for
};

class QnnMemRegistrar {
 public:
  virtual ~QnnMemRegistrar() = default;
  // The contexts in which I/O `io_index` of `method` is a QNN graph tensor. Empty when the
  // tensor does not reach a QNN graph (nothing to register).
  virtual Result<std::vector<QnnContextId>> contexts_for(const std::string& method, size_t io_index,
                                                         bool is_input) = 0;
  virtual Result<QnnMemHandle> register_memory(QnnContextId context, const QnnMemRegion& region) = 0;
  virtual void deregister_memory(QnnContextId context, QnnMemHandle handle) = 0;
};

// The process-wide registrar rpcmem allocators use when they were not given one (set by the
// SDK delegate when it registers; null otherwise, in which case binding registers nothing).
void set_qnn_mem_registrar(std::shared_ptr<QnnMemRegistrar> registrar);
std::shared_ptr<QnnMemRegistrar> qnn_mem_registrar();

}  // namespace kestrel::qnn
