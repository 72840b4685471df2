// Kestrel payload -> QNN op graph. Each Kestrel node becomes one or more QNN ops with their
// parameters as QnnOpDef.h names them (see docs/backends/qnn.md for the table); ops QNN lacks
// (attention, rope, silu, tanh-gelu, index_copy) are decomposed here. The result is a plan the
// delegate replays through QnnApi: tensors, ops, and which tensors the delegate's inputs and
// exported outputs are.
#pragma once

#include <deque>
#include <functional>
#include <span>
#include <vector>

#include "backends/qnn/qnn_api.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/core/result.h"

namespace kestrel::qnn {

struct QnnGraphPlan {
  std::vector<QnnTensorSpec> tensors;   // a tensor's id in the plan is its index
  std::vector<QnnOpSpec> ops;           // in execution order; tensor ids index `tensors`
  std::vector<int32_t> input_tensors;   // per delegate input: its APP_WRITE tensor, or -1 (static)
  std::vector<int32_t> output_tensors;  // per exported output: its APP_READ tensor
  std::deque<std::vector<uint8_t>> owned;  // bytes of the static tensors the lowering made

  // Distinct QNN op types, sorted.
  std::vector<std::string> op_types() const;
};

// The bytes of a payload parameter or constant: embedded in the payload, or the program
// constant wired to its delegate input.
using ConstantBytes = std::function<Result<std::span<const uint8_t>>(const QnnPayloadValue& value)>;

// Errors name the Kestrel node and what QNN cannot express.
Result<QnnGraphPlan> lower_to_qnn(const QnnPayload& payload, const ConstantBytes& constants);

// QNN data type of a Kestrel dtype (f32, f16, i32); i64 and the rest are errors.
Result<QnnDataType> qnn_data_type(DType dtype);

}  // namespace kestrel::qnn
