#include "python_allocator.h"

#include <fmt/format.h>

#include <cstdint>

#include "kestrel/core/error_helpers.h"
#include "tensor_info.h"

namespace kestrel::python {

namespace {

constexpr size_t kDefaultAlignment = 64;

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw py::error_already_set();
}

std::string type_name(py::handle object) { return py::str(py::type::handle_of(object).attr("__name__")); }

}  // namespace

std::shared_ptr<PythonBufferAllocator> PythonBufferAllocator::create(py::object hook) {
  for (const char* required : {"allocate", "free"})
    if (!py::hasattr(hook, required))
      raise(PyExc_TypeError, fmt::format("allocator {} has no {}() method (it needs allocate(nbytes, info) and "
                                         "free(buffer); alignment() and bind(buffer, method, index, is_input) are "
                                         "optional)",
                                         type_name(hook), required));
  size_t alignment = kDefaultAlignment;
  if (py::hasattr(hook, "alignment")) {
    py::object value = hook.attr("alignment")();
    if (!PyLong_Check(value.ptr()) || PyBool_Check(value.ptr()))
      raise(PyExc_TypeError, fmt::format("allocator alignment() returned a {}, not an int", type_name(value)));
    const auto requested = value.cast<int64_t>();
    if (requested <= 0 || (requested & (requested - 1)) != 0)
      raise(PyExc_ValueError, fmt::format("allocator alignment() returned {}, not a positive power of two", requested));
    alignment = static_cast<size_t>(requested);
  }
  return std::shared_ptr<PythonBufferAllocator>(new PythonBufferAllocator(std::move(hook), alignment));
}

PythonBufferAllocator::~PythonBufferAllocator() {
  // The runner frees every buffer before the allocator goes; anything left is released here.
  py::gil_scoped_acquire gil;
  for (auto& [address, held] : held_) PyBuffer_Release(&held.view);
  held_.clear();
  error_.reset();
  hook_ = py::object();
}

void PythonBufferAllocator::keep(py::error_already_set error) {
  if (!error_) error_ = std::move(error);
}

void PythonBufferAllocator::reject(py::object object) {
  try {
    hook_.attr("free")(object);
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("kestrel allocator free() of a rejected buffer");
  }
}

void* PythonBufferAllocator::allocate(size_t bytes, const runtime::TensorInfo& info) {
  py::gil_scoped_acquire gil;
  if (error_) return nullptr;  // after a failed hook the load is going to fail: use the heap meanwhile
  py::object object;
  try {
    object = hook_.attr("allocate")(bytes, tensor_info(info));
    if (object.is_none()) return nullptr;
    Held held{object, {}};
    if (PyObject_GetBuffer(object.ptr(), &held.view, PyBUF_CONTIG) != 0) {
      PyErr_Clear();
      raise(PyExc_TypeError, fmt::format("allocator allocate() for '{}' returned a {}, which is not a writable "
                                         "contiguous buffer (return None, a numpy array, an mmap, ...)",
                                         info.name, type_name(object)));
    }
    std::string problem;
    if (static_cast<size_t>(held.view.len) < bytes)
      problem = fmt::format("{} bytes; '{}' needs {}", held.view.len, info.name, bytes);
    else if (reinterpret_cast<uintptr_t>(held.view.buf) % alignment_ != 0)
      problem = fmt::format("a buffer for '{}' at {} that is not aligned to {} bytes (alignment())", info.name,
                            held.view.buf, alignment_);
    else if (held_.count(held.view.buf))
      problem = fmt::format("a buffer for '{}' at {} that another tensor already uses", info.name, held.view.buf);
    if (!problem.empty()) {
      PyBuffer_Release(&held.view);
      raise(PyExc_ValueError, "allocator allocate() returned " + problem);
    }
    void* address = held.view.buf;
    held_.emplace(address, std::move(held));
    return address;
  } catch (py::error_already_set& error) {
    keep(std::move(error));
    if (object && !object.is_none()) reject(object);
    return nullptr;
  }
}

Status PythonBufferAllocator::bind(void* buffer, const std::string& method, size_t io_index, bool is_input) {
  py::gil_scoped_acquire gil;
  auto it = held_.find(buffer);
  if (it == held_.end())
    return make_error(ErrorCode::kInternal, "allocator bind() for a buffer it did not allocate");
  if (!py::hasattr(hook_, "bind")) return ok_status();
  try {
    hook_.attr("bind")(it->second.object, method, io_index, is_input);
    return ok_status();
  } catch (py::error_already_set& error) {
    const std::string message = error.what();
    keep(std::move(error));
    return make_error(ErrorCode::kInvalidArgument, "allocator bind() for {} {} of method '{}' raised {}",
                      is_input ? "input" : "output", io_index, method, message);
  }
}

void PythonBufferAllocator::free(void* buffer) {
  py::gil_scoped_acquire gil;
  auto it = held_.find(buffer);
  if (it == held_.end()) return;
  py::object object = std::move(it->second.object);
  PyBuffer_Release(&it->second.view);  // before free(), which may close or resize the buffer
  held_.erase(it);
  try {
    hook_.attr("free")(object);
  } catch (py::error_already_set& error) {
    error.discard_as_unraisable("kestrel allocator free()");
  }
}

void PythonBufferAllocator::raise_pending_error() {
  if (!error_) return;
  py::error_already_set error = std::move(*error_);
  error_.reset();
  throw error;
}

}  // namespace kestrel::python
