// kestrel.Program: what a program file holds (metadata, methods and their I/O, delegates),
// read through the verifying loader, and kestrel.TensorInfo, the description of one tensor.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <filesystem>
#include <map>
#include <memory>
#include <variant>

#include "bindings.h"
#include "kestrel/program/describe.h"
#include "kestrel/program/loaded_program.h"
#include "tensor_info.h"

namespace kestrel::python {

namespace {

struct MethodInfo {
  std::string name;
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
  uint64_t arena_bytes = 0;
  size_t instructions = 0;
};

struct DelegateInfo {
  std::string backend_id;
  size_t payload_bytes = 0;
  std::map<std::string, py::bytes> compile_specs;
};

class Program {
 public:
  explicit Program(const std::filesystem::path& path) : path_(path.string()) {
    std::optional<Result<std::shared_ptr<const program::LoadedProgram>>> loaded;
    {
      py::gil_scoped_release release;
      loaded.emplace(program::LoadedProgram::load_file(path_));
    }
    loaded_ = unwrap(std::move(*loaded));
  }

  const std::string& path() const { return path_; }

  py::dict metadata() const {
    py::dict out;
    for (const auto& [key, value] : loaded_->spec().metadata)
      out[py::str(key)] = std::visit([](const auto& v) -> py::object { return py::cast(v); }, value);
    return out;
  }

  py::dict methods() const {
    py::dict out;
    for (const auto& method : loaded_->spec().methods) {
      MethodInfo info{method.name, {}, {}, method.arena_bytes, method.instructions.size()};
      auto describe = [&](int32_t index) { return tensor_info(method.values.at(static_cast<size_t>(index))); };
      for (int32_t index : method.inputs) info.inputs.push_back(describe(index));
      for (int32_t index : method.outputs) info.outputs.push_back(describe(index));
      out[py::str(method.name)] = std::move(info);
    }
    return out;
  }

  std::vector<DelegateInfo> delegates() const {
    std::vector<DelegateInfo> out;
    for (const auto& delegate : loaded_->spec().delegates) {
      DelegateInfo info{delegate.backend_id, loaded_->segment(delegate.payload_segment).size(), {}};
      for (const auto& [key, bytes] : delegate.compile_specs)
        info.compile_specs.emplace(key, py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      out.push_back(std::move(info));
    }
    return out;
  }

  std::string describe() const { return program::describe_program(*loaded_); }
  uint64_t file_bytes() const { return loaded_->file_bytes(); }

 private:
  std::string path_;
  std::shared_ptr<const program::LoadedProgram> loaded_;
};

}  // namespace

void register_program(py::module_& module) {
  py::class_<TensorInfo>(module, "TensorInfo", "A tensor of a method's inputs or outputs.")
      .def_readonly("name", &TensorInfo::name)
      .def_readonly("dtype", &TensorInfo::dtype, "f32, f16, bf16, i32, i64, u8 or q8")
      .def_property_readonly("shape", [](const TensorInfo& info) { return py::tuple(py::cast(info.shape)); })
      .def_readonly("nbytes", &TensorInfo::nbytes)
      .def("__repr__", [](const TensorInfo& info) {
        return py::str("TensorInfo(name={!r}, dtype={!r}, shape={!r}, nbytes={})")
            .format(info.name, info.dtype, py::tuple(py::cast(info.shape)), info.nbytes);
      });

  py::class_<MethodInfo>(module, "MethodInfo", "One method of a program: its I/O in call order.")
      .def_readonly("name", &MethodInfo::name)
      .def_readonly("inputs", &MethodInfo::inputs)
      .def_readonly("outputs", &MethodInfo::outputs)
      .def_readonly("arena_bytes", &MethodInfo::arena_bytes)
      .def_readonly("instructions", &MethodInfo::instructions)
      .def("__repr__", [](const MethodInfo& info) {
        return py::str("MethodInfo(name={!r}, inputs={}, outputs={})")
            .format(info.name, info.inputs.size(), info.outputs.size());
      });

  py::class_<DelegateInfo>(module, "DelegateInfo", "A delegate: a backend's payload and its compile specs.")
      .def_readonly("backend_id", &DelegateInfo::backend_id)
      .def_readonly("payload_bytes", &DelegateInfo::payload_bytes)
      .def_readonly("compile_specs", &DelegateInfo::compile_specs)
      .def("__repr__", [](const DelegateInfo& info) {
        return py::str("DelegateInfo(backend_id={!r}, payload_bytes={})").format(info.backend_id, info.payload_bytes);
      });

  py::class_<Program>(module, "Program",
                      R"(A program file, mapped and verified (as `kestrel inspect` reads it).

Raises a kestrel.Error subclass naming the file and the problem when it cannot be read.)")
      .def(py::init<const std::filesystem::path&>(), py::arg("path"))
      .def_property_readonly("path", &Program::path)
      .def_property_readonly("metadata", &Program::metadata,
                             "Program metadata (io contract, model info, tokenizer, ...) as a dict.")
      .def_property_readonly("methods", &Program::methods, "Methods by name, in file order.")
      .def_property_readonly("delegates", &Program::delegates)
      .def_property_readonly("file_bytes", &Program::file_bytes)
      .def("describe", &Program::describe, "The text `kestrel inspect` prints.")
      .def("__repr__", [](const Program& program) { return py::str("Program({!r})").format(program.path()); });
}

}  // namespace kestrel::python
