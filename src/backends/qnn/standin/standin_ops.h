// The QNN ops the stand-in knows, each checked against its QNN op definition (inputs, parameter
// names and types, output shape and type) when the node is added, and executed on the host.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "backends/qnn/qnn_api.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn::standin {

// A tensor of a stand-in graph.
struct Tensor {
  QnnTensorSpec spec;
  std::vector<uint8_t> storage;  // NATIVE tensors, allocated at finalize
  uint8_t* data = nullptr;       // where the bytes are during execute (static: the spec's data)
  bool produced = false;         // an earlier node writes it
  bool consumed = false;         // a node reads it
};

// One node: its spec, its tensors and typed access to its parameters.
class OpArgs {
 public:
  OpArgs(const QnnOpSpec& op, std::vector<Tensor>& tensors);

  const QnnOpSpec& op;
  std::vector<Tensor*> in;
  std::vector<Tensor*> out;

  // Scalar parameters; absent ones take `fallback` (an error when there is none).
  Result<uint32_t> u32(const char* name, std::optional<uint32_t> fallback = std::nullopt) const;
  Result<int32_t> i32(const char* name, std::optional<int32_t> fallback = std::nullopt) const;
  Result<float> f32(const char* name, std::optional<float> fallback = std::nullopt) const;
  Result<bool> boolean(const char* name, std::optional<bool> fallback = std::nullopt) const;
  // A static tensor parameter of `type` (required).
  Result<const Tensor*> tensor(const char* name, QnnDataType type) const;

  // Checks that output `i` has `dims` and `type`.
  Status expect_output(size_t i, const std::vector<uint32_t>& dims, QnnDataType type) const;

  template <typename... Args>
  Error fail(fmt::format_string<Args...> format, Args&&... args) const {
    return make_error(ErrorCode::kInvalidArgument, "qnn stand-in: {} '{}': {}", op.type, op.name,
                      fmt::format(format, std::forward<Args>(args)...));
  }

 private:
  const QnnParam* param(const char* name) const;
  Result<QnnScalar> scalar(const char* name, QnnDataType type) const;
  template <typename T>
  Result<T> scalar_or(const char* name, QnnDataType type, std::optional<T> fallback, T QnnScalar::*field) const;
  std::vector<Tensor>& tensors_;
};

struct OpDef {
  size_t min_inputs = 1;
  size_t max_inputs = 1;
  Status (*check)(const OpArgs& args) = nullptr;  // when the node is added
  Status (*run)(OpArgs& args) = nullptr;          // at execute
};

// Null for an op type the stand-in does not know.
const OpDef* find_op(std::string_view type);

}  // namespace kestrel::qnn::standin
