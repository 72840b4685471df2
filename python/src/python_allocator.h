// runtime::BufferAllocator backed by a Python object, so Python code can provide method I/O
// buffers through the same hook the CLI's allocators (heap, memfd, rpcmem) use.
//
// The object has allocate(nbytes, info) and free(buffer), and optionally alignment() (read
// once; default 64) and bind(buffer, method, index, is_input). allocate returns None (the
// runner then uses the heap) or an object exposing a writable, contiguous buffer of at least
// nbytes bytes whose address is a multiple of the alignment (a numpy array, an mmap, ...).
// The allocator holds that object, and the buffer export, until free(buffer) is called with
// it; every object allocate returned other than None is passed to free exactly once.
//
// Every call runs with the GIL held (acquired when the runner calls in without it). An
// exception raised by a hook while the runner loads is kept and re-raised by the caller
// (raise_pending_error) once loading is over.
#pragma once

#include <pybind11/pybind11.h>

#include <map>
#include <memory>
#include <optional>

#include "kestrel/runtime/buffer_allocator.h"

namespace kestrel::python {

namespace py = pybind11;

class PythonBufferAllocator final : public runtime::BufferAllocator {
 public:
  // Checks the hook object and reads its alignment; raises TypeError or ValueError if unusable.
  static std::shared_ptr<PythonBufferAllocator> create(py::object hook);
  ~PythonBufferAllocator() override;

  std::string_view name() const override { return "python"; }
  size_t alignment() const override { return alignment_; }
  void* allocate(size_t bytes, const runtime::TensorInfo& info) override;
  Status bind(void* buffer, const std::string& method, size_t io_index, bool is_input) override;
  void free(void* buffer) override;

  // Whether a hook raised; raise_pending_error() re-raises the first exception (GIL held).
  bool has_pending_error() const { return error_.has_value(); }
  void raise_pending_error();

 private:
  struct Held {
    py::object object;  // what allocate returned
    Py_buffer view;     // its buffer export, released before free() is called
  };
  PythonBufferAllocator(py::object hook, size_t alignment) : hook_(std::move(hook)), alignment_(alignment) {}
  // Gives a buffer allocate returned but the runner cannot use back to free().
  void reject(py::object object);
  void keep(py::error_already_set error);

  py::object hook_;
  size_t alignment_;
  std::map<void*, Held> held_;  // guarded by the GIL
  std::optional<py::error_already_set> error_;
};

}  // namespace kestrel::python
