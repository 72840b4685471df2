// Runs a hand-built Kestrel graph through the QNN delegate on a CPU stand-in, the way a method
// does: preprocess (export) -> init with the graph's constants as program constants -> execute
// with outputs in the order the delegate reports them.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "backends/qnn/standin/standin_api.h"
#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn::testing {

// Bytes of a tensor of `dtype` holding `values` (f32, f16 or i32).
inline std::vector<uint8_t> encode(DType dtype, const std::vector<double>& values) {
  std::vector<uint8_t> out(values.size() * dtype_element_size(dtype));
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DType::kF32) {
      const float v = static_cast<float>(values[i]);
      std::memcpy(out.data() + 4 * i, &v, 4);
    } else if (dtype == DType::kF16) {
      const uint16_t v = f32_to_f16(static_cast<float>(values[i]));
      std::memcpy(out.data() + 2 * i, &v, 2);
    } else {
      const auto v = static_cast<int32_t>(values[i]);
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
  }
  return out;
}

inline std::vector<double> decode(DType dtype, const std::vector<uint8_t>& bytes) {
  std::vector<double> out(bytes.size() / dtype_element_size(dtype));
  for (size_t i = 0; i < out.size(); ++i) {
    if (dtype == DType::kF32) {
      float v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    } else if (dtype == DType::kF16) {
      uint16_t v;
      std::memcpy(&v, bytes.data() + 2 * i, 2);
      out[i] = f16_to_f32(v);
    } else {
      int32_t v;
      std::memcpy(&v, bytes.data() + 4 * i, 4);
      out[i] = v;
    }
  }
  return out;
}

struct DelegateRun {
  std::vector<std::vector<double>> outputs;  // in the graph's output order
  std::vector<int32_t> output_order;         // what init reported
  std::vector<std::string> qnn_op_types;     // QNN ops the stand-in saw
};

// `inputs`: values of the graph's user inputs, by value id. Parameters and constants are given
// to the delegate as the program's constants (views of their data), as a method does.
inline Result<DelegateRun> run_on_standin(const exporter::Graph& g, const std::map<exporter::ValueId, std::vector<double>>& inputs,
                                          QnnCompileSpecBuilder specs_builder = {}) {
  KESTREL_ASSIGN_OR_RETURN(auto specs, specs_builder.build());
  KESTREL_ASSIGN_OR_RETURN(auto payload, QnnBackendExporter().preprocess(g, specs));
  auto api = std::make_shared<StandinApi>();
  QnnBackendOptions options;
  options.api = api;
  auto backend = make_qnn_backend(options);

  runtime::DelegateContext where;
  where.method = "forward";
  std::vector<std::vector<uint8_t>> input_bytes;
  std::vector<TensorView> views;
  for (exporter::ValueId id : g.inputs()) {
    const exporter::Value& v = g.value(id);
    const Shape shape(std::span<const int64_t>(v.shape));
    if (v.input_kind == exporter::InputKind::kParameter || v.input_kind == exporter::InputKind::kConstant) {
      TensorView view = TensorView::contiguous(v.dtype, shape, const_cast<uint8_t*>(v.data->held_bytes().data()));
      where.constants.push_back(view);
      where.method_inputs.push_back(-1);
      views.push_back(view);
      continue;
    }
    auto it = inputs.find(id);
    if (it == inputs.end()) return make_error(ErrorCode::kInvalidArgument, "test: no values for input '{}'", v.name);
    input_bytes.push_back(encode(v.dtype, it->second));
    where.constants.push_back(TensorView::contiguous(v.dtype, shape, nullptr));
    where.method_inputs.push_back(static_cast<int32_t>(input_bytes.size() - 1));
    views.push_back(TensorView::contiguous(v.dtype, shape, input_bytes.back().data()));
  }
  for (size_t k = 0; k < g.outputs().size(); ++k) where.method_outputs.push_back(static_cast<int32_t>(k));
  KESTREL_ASSIGN_OR_RETURN(auto instance, backend->init(payload, specs, where));

  DelegateRun run;
  run.output_order = instance.output_order;
  std::vector<std::vector<uint8_t>> output_bytes(g.outputs().size());
  std::vector<TensorView> outs;
  for (int32_t exported : instance.output_order) {
    const exporter::Value& v = g.value(g.outputs().at(exported));
    output_bytes[exported].assign(static_cast<size_t>(v.numel()) * dtype_element_size(v.dtype), 0xAB);
    outs.push_back(TensorView::contiguous(v.dtype, Shape(std::span<const int64_t>(v.shape)), output_bytes[exported].data()));
  }
  Status executed = backend->execute(instance.handle, views, outs);
  backend->destroy(instance.handle);
  KESTREL_RETURN_IF_ERROR(executed);
  for (size_t k = 0; k < g.outputs().size(); ++k)
    run.outputs.push_back(decode(g.value(g.outputs()[k]).dtype, output_bytes[k]));
  for (const auto& [type, n] : api->op_counts()) run.qnn_op_types.push_back(type);
  return run;
}

// A parameter of `values` encoded as `dtype`.
inline exporter::ValueId parameter(exporter::Graph& g, const std::string& name, DType dtype, std::vector<int64_t> shape,
                                   const std::vector<double>& values) {
  return g.add_input(name, dtype, std::move(shape), exporter::InputKind::kParameter,
                     exporter::ConstantData::owned(encode(dtype, values)));
}

}  // namespace kestrel::qnn::testing
