#include <array>
#include <utility>

#include "bindings.h"

namespace kestrel::python {

namespace {

struct ErrorClass {
  ErrorCode code;
  const char* name;
  PyObject* builtin;  // the built-in exception the class also derives from
  const char* doc;
};

// Indexed by ErrorCode.
std::array<PyObject*, 9> g_classes{};

}  // namespace

void register_errors(py::module_& module) {
  PyObject* base = PyErr_NewExceptionWithDoc(
      "kestrel.Error", "Base class of every error Kestrel reports; `code` names the kind of error.", PyExc_Exception,
      nullptr);
  if (base == nullptr) throw py::error_already_set();
  module.attr("Error") = py::reinterpret_borrow<py::object>(base);
  const ErrorClass classes[] = {
      {ErrorCode::kInvalidArgument, "InvalidArgumentError", PyExc_ValueError, "A malformed argument or option."},
      {ErrorCode::kNotFound, "NotFoundError", PyExc_ValueError, "A named thing (backend, method, tensor) is absent."},
      {ErrorCode::kOutOfRange, "OutOfRangeError", PyExc_ValueError, "An index, size or id is out of bounds."},
      {ErrorCode::kCorrupt, "CorruptError", PyExc_ValueError, "A file failed verification."},
      {ErrorCode::kUnsupported, "UnsupportedError", PyExc_NotImplementedError,
       "Valid, but not something this build can do."},
      {ErrorCode::kIo, "IoError", PyExc_OSError, "The operating system refused an open, map, read or write."},
      {ErrorCode::kCapacity, "CapacityError", PyExc_ValueError,
       "A request does not fit (context length, buffer size)."},
      {ErrorCode::kUnavailable, "UnavailableError", PyExc_RuntimeError,
       "A backend or library cannot be used on this machine."},
      {ErrorCode::kInternal, "InternalError", PyExc_RuntimeError, "An invariant did not hold (a bug)."},
  };
  for (const ErrorClass& entry : classes) {
    const std::string qualified = std::string("kestrel.") + entry.name;
    py::tuple bases = py::make_tuple(py::reinterpret_borrow<py::object>(base),
                                     py::reinterpret_borrow<py::object>(entry.builtin));
    PyObject* created = PyErr_NewExceptionWithDoc(qualified.c_str(), entry.doc, bases.ptr(), nullptr);
    if (created == nullptr) throw py::error_already_set();
    g_classes.at(static_cast<size_t>(entry.code)) = created;  // lives as long as the process
    module.attr(entry.name) = py::reinterpret_borrow<py::object>(created);
  }
}

void raise_error(const Error& error) {
  PyObject* type = g_classes.at(static_cast<size_t>(error.code()));
  py::object instance = py::reinterpret_borrow<py::object>(type)(text(error.to_string()));
  instance.attr("code") = error_code_name(error.code());
  PyErr_SetObject(type, instance.ptr());
  throw py::error_already_set();
}

py::str text(const std::string& utf8) {
  PyObject* decoded = PyUnicode_DecodeUTF8(utf8.data(), static_cast<Py_ssize_t>(utf8.size()), "replace");
  if (decoded == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(decoded);
}

}  // namespace kestrel::python
