// kestrel.export and kestrel.create_default_model: the CLI's export path (api::export_checkpoint)
// with backend options given as a Python dict.
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <fmt/format.h>

#include <filesystem>
#include <optional>
#include <set>

#include "bindings.h"
#include "kestrel/api/backend_catalog.h"
#include "kestrel/api/export.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/fixtures/default_model.h"

namespace kestrel::python {

namespace {

using exporter::OptionMap;
using exporter::OptionTable;
using exporter::OptionType;
using exporter::OptionValue;

bool is_int(py::handle value) { return PyLong_Check(value.ptr()) && !PyBool_Check(value.ptr()); }

// Elements of a set, frozenset, list or tuple; nullopt for any other object.
std::optional<std::vector<py::handle>> collection_items(py::handle value) {
  if (!PySet_Check(value.ptr()) && !PyFrozenSet_Check(value.ptr()) && !PyList_Check(value.ptr()) &&
      !PyTuple_Check(value.ptr()))
    return std::nullopt;
  std::vector<py::handle> items;
  for (py::handle item : value) items.push_back(item);
  return items;
}

// The option value a Python object stands for: bool, int, str, or a set (or list) of str or of
// int. Whether it is the type the option declares is checked by the option table, so type
// errors read as they do for the CLI and JSON files. nullopt when the object is none of these.
std::optional<OptionValue> option_value(py::handle value, const exporter::OptionSpec* spec) {
  if (PyBool_Check(value.ptr())) return OptionValue(value.cast<bool>());
  if (is_int(value)) return OptionValue(value.cast<int64_t>());
  if (PyUnicode_Check(value.ptr())) return OptionValue(value.cast<std::string>());
  auto items = collection_items(value);
  if (!items) return std::nullopt;
  bool all_str = true, all_int = true;
  for (py::handle item : *items) {
    all_str = all_str && PyUnicode_Check(item.ptr());
    all_int = all_int && is_int(item);
  }
  if (items->empty()) {  // an empty set has the type the option declares
    if (spec && spec->type == OptionType::kIntSet) return OptionValue(std::set<int64_t>{});
    return OptionValue(std::set<std::string>{});
  }
  if (all_str) {
    std::set<std::string> strings;
    for (py::handle item : *items) strings.insert(item.cast<std::string>());
    return OptionValue(std::move(strings));
  }
  if (all_int) {
    std::set<int64_t> ints;
    for (py::handle item : *items) ints.insert(item.cast<int64_t>());
    return OptionValue(std::move(ints));
  }
  return std::nullopt;
}

OptionMap options_from_python(const OptionTable& table, const py::dict& options) {
  OptionMap map;
  for (auto [key, value] : options) {
    if (!PyUnicode_Check(key.ptr()))
      raise_error(make_error(ErrorCode::kInvalidArgument, "option names must be str, got {}",
                             py::repr(key).cast<std::string>()));
    const auto name = key.cast<std::string>();
    const exporter::OptionSpec* spec = table.find(name);
    auto converted = option_value(value, spec);
    if (!converted) {
      if (!spec) {
        // The table reports the unknown name (with the closest valid one) whatever the value.
        map.emplace(name, OptionValue(false));
        continue;
      }
      raise_error(make_error(ErrorCode::kInvalidArgument, "option '{}' of backend '{}' expects {}, got {} (Python {})",
                             name, table.backend(), exporter::option_type_name(spec->type),
                             py::repr(value).cast<std::string>(), py::type::handle_of(value).attr("__name__").cast<std::string>()));
    }
    map.emplace(name, std::move(*converted));
  }
  return map;
}

py::dict report_dict(const exporter::ExportReport& report, const std::string& output) {
  py::list methods;
  for (const auto& method : report.methods) {
    py::list partitions;
    for (const auto& partition : method.pipeline.partitions) {
      py::dict portable_ops;
      for (const auto& [op, count] : partition.portable_ops) portable_ops[py::str(op)] = count;
      partitions.append(py::dict(py::arg("delegated_nodes") = partition.delegated_nodes,
                                 py::arg("portable_nodes") = partition.portable_nodes,
                                 py::arg("partitions") = partition.partitions,
                                 py::arg("portable_ops") = portable_ops));
    }
    methods.append(py::dict(py::arg("name") = method.name, py::arg("step") = method.step,
                            py::arg("instructions") = method.instructions,
                            py::arg("arena_bytes") = method.arena_bytes, py::arg("partitions") = partitions));
  }
  return py::dict(py::arg("output") = output, py::arg("max_context") = report.max_context,
                  py::arg("constants") = report.constants, py::arg("constant_bytes") = report.constant_bytes,
                  py::arg("methods") = methods);
}

py::dict export_program(const std::filesystem::path& checkpoint, const std::filesystem::path& output,
                        const std::optional<std::string>& backend, const std::optional<py::dict>& options,
                        const std::string& dtype, std::optional<int64_t> max_context, int64_t prefill_step,
                        const std::optional<std::filesystem::path>& tokenizer, const std::string& logits,
                        const std::optional<py::function>& progress, const std::vector<int64_t>& extra_prefill_steps,
                        const std::string& cache_dtype) {
  api::ExportRequest request;
  if (backend) request.backend = unwrap(api::find_exporter_backend(*backend));
  if (options && !options->empty()) {
    if (!request.backend)
      raise_error(make_error(ErrorCode::kInvalidArgument, "options need a backend (available: {})",
                             fmt::join(api::exporter_backend_names(), ", ")));
    request.backend_options = options_from_python(request.backend->options(), *options);
  }
  request.dtype = unwrap(api::parse_weight_dtype(dtype));
  request.cache_dtype = unwrap(api::parse_cache_dtype(cache_dtype));
  if (max_context && *max_context <= 0)
    raise_error(make_error(ErrorCode::kInvalidArgument, "max_context must be a positive number of positions, got {}",
                           *max_context));
  request.checkpoint = checkpoint.string();
  request.output = output.string();
  request.max_context = max_context.value_or(0);
  request.prefill_step = prefill_step;
  request.extra_prefill_steps = extra_prefill_steps;
  request.logits = logits;
  request.tokenizer = tokenizer ? tokenizer->string() : "";
  std::optional<py::error_already_set> progress_error;
  if (progress) {
    request.progress = [&](const std::string& line) {
      py::gil_scoped_acquire gil;
      if (progress_error) return;
      try {
        (*progress)(text(line));
      } catch (py::error_already_set& error) {
        progress_error = std::move(error);
      }
    };
  }
  std::optional<Result<exporter::ExportReport>> report;
  {
    py::gil_scoped_release release;
    report.emplace(api::export_checkpoint(request));
  }
  if (progress_error) throw *progress_error;
  return report_dict(unwrap(std::move(*report)), request.output);
}

}  // namespace

void register_export(py::module_& module) {
  module.def("export", &export_program, py::arg("checkpoint"), py::arg("output"), py::arg("backend") = py::none(),
             py::arg("options") = py::none(), py::arg("dtype") = "f32", py::arg("max_context") = py::none(),
             py::arg("prefill_step") = 32, py::arg("tokenizer") = py::none(), py::arg("logits") = "last",
             py::arg("progress") = py::none(), py::arg("extra_prefill_steps") = std::vector<int64_t>{},
             py::arg("cache_dtype") = "f32",
             R"(Exports a checkpoint to a program file, as `kestrel export` does.

checkpoint: a Hugging Face model directory (config.json, safetensors, tokenizer.json) or a
    llama2.c .bin file (then `tokenizer` names its tokenizer.bin).
output: the program file to write (.kst).
backend: delegate the parts a backend supports to it ("qnn"); None keeps everything portable.
options: the backend's options as a dict, routed to its partitioner or compile specs (see
    `kestrel export --backend qnn --list-options`): bool, int, str, or a set (or list) of str or
    of int. An unknown name or a wrong type raises InvalidArgumentError (a ValueError) naming the
    option and the closest valid one.
dtype: weight dtype, "f32", "f16", "bf16" or "q8".
max_context: KV cache length; None uses the checkpoint's, at most 1024.
prefill_step: tokens per prefill call.
logits: "last" (the prefill method returns the last position's logits) or "all".
progress: called with one line of text per export stage.
extra_prefill_steps: more prefill methods, one per step (e.g. [512]); the runner sends each full
    chunk of a prompt through the largest step that fits.
cache_dtype: KV cache dtype, "f32" (exact) or "f16" (half the cache memory and the attention
    reads of a decode step; keys and values are rounded to f16 as they are stored).

Returns a report: output path, max_context, constants and their bytes, and per method its step,
instruction count, arena bytes and partitions. Errors raise a kestrel.Error subclass with the
message the CLI prints. The GIL is released while exporting.)");

  module.def(
      "create_default_model",
      [](const std::filesystem::path& directory, uint64_t seed) {
        check(fixtures::write_default_model(directory.string(), seed));
      },
      py::arg("directory"), py::arg("seed") = fixtures::kDefaultModelSeed,
      R"(Writes the embedded default model (a small Llama-architecture checkpoint in Hugging Face
format with its own byte-level BPE tokenizer) to `directory`, as `kestrel create-model` does.)");
}

}  // namespace kestrel::python
