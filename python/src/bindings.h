// Shared pieces of the Python bindings: error translation, text conversion, and the
// registration function of each part of the module.
#pragma once

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include "kestrel/core/result.h"

namespace kestrel::python {

namespace py = pybind11;

// Creates kestrel.Error and one subclass per error code, each also deriving from the
// built-in exception a Python caller expects (ValueError, OSError, RuntimeError, ...).
void register_errors(py::module_& module);
// Raises the exception class of error.code() with error.to_string(), the text the CLI prints.
[[noreturn]] void raise_error(const Error& error);

inline void check(const Status& status) {
  if (!status.ok()) raise_error(status.error());
}

template <typename T>
T unwrap(Result<T> result) {
  if (!result.ok()) raise_error(result.error());
  return std::move(result).value();
}

// A str from UTF-8 bytes; bytes that do not decode become U+FFFD instead of an exception.
py::str text(const std::string& utf8);

void register_export(py::module_& module);
void register_program(py::module_& module);
void register_runner(py::module_& module);

}  // namespace kestrel::python
