// The QNN delegate payload: what preprocess() writes at export time and what the delegate
// reads at init to build its QNN graph.
//
// Layout (little endian):
//   bytes  0..7   magic "KQNNPAY\0"
//   bytes  8..11  u32 format version (kQnnPayloadVersion)
//   bytes 12..15  u32 reserved (0)
//   bytes 16..23  u64 header length H (UTF-8 JSON)
//   bytes 24..31  u64 blob offset B (64-aligned, >= 32 + H)
//   bytes 32..39  u64 blob length L
//   bytes 40..    JSON header, zero padding, then the blob at B
// The JSON header: {"version", "compile_specs": {key: text}, "values": [{id, name, dtype,
// shape, kind, alias_of, input_index, output_index, data: {offset, nbytes}}], "inputs": [ids],
// "outputs": [ids], "nodes": [{id, op, inputs, outputs, attrs: {name: {type, value}}}]}.
// Parameters and constants whose bytes the exporter had are embedded in the blob (64-aligned),
// unless the compile spec embed_parameters is "false"; one without embedded bytes is a
// reference: the runtime passes it as the delegate input at its input_index, like any other
// input (for a program's constants, a view into its shared constant segment).
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"
#include "kestrel/program/spec.h"

namespace kestrel::qnn {

inline constexpr uint32_t kQnnPayloadVersion = 1;
inline constexpr size_t kQnnPayloadFixedHeader = 40;
inline constexpr size_t kQnnPayloadAlignment = 64;

enum class QnnValueKind : uint8_t {
  kInput,         // a runtime input of the delegate (user, buffer, or a referenced parameter)
  kParameter,     // weight; embedded bytes or a reference
  kConstant,      // exporter-made table; embedded bytes or a reference
  kIntermediate,  // produced and consumed inside the delegate
  kOutput,        // produced inside and returned (output_index says where)
};

struct QnnPayloadValue {
  int32_t id = -1;
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  QnnValueKind kind = QnnValueKind::kIntermediate;
  exporter::InputKind input_kind = exporter::InputKind::kNone;  // as in the export graph
  int32_t alias_of = -1;
  int32_t input_index = -1;   // position among the delegate inputs, -1 if not an input
  int32_t output_index = -1;  // exported output index, -1 if not an output
  bool embedded = false;      // bytes are in the blob
  uint64_t data_offset = 0;   // into the blob
  uint64_t data_bytes = 0;
};

struct QnnPayloadNode {
  int32_t id = -1;
  std::string op;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;
  program::Attrs attrs;
};

struct QnnPayload {
  uint32_t version = kQnnPayloadVersion;
  std::map<std::string, std::string> compile_specs;
  std::vector<QnnPayloadValue> values;  // sorted by id
  std::vector<int32_t> inputs;          // value ids, in delegate input order
  std::vector<int32_t> outputs;         // value ids, in exported output order
  std::vector<QnnPayloadNode> nodes;    // topological order
  std::span<const uint8_t> blob;        // view into the parsed bytes

  const QnnPayloadValue* find_value(int32_t id) const;
  // The embedded bytes of a parameter or constant (empty for a reference).
  std::span<const uint8_t> data_of(const QnnPayloadValue& value) const;
};

const char* qnn_value_kind_name(QnnValueKind kind);

// Serializes a partition subgraph. Inputs keep subgraph.inputs() order, outputs keep
// subgraph.outputs() order. Errors name the offending value or node.
Result<std::vector<uint8_t>> serialize_qnn_payload(
    const exporter::Graph& subgraph, const std::map<std::string, std::vector<uint8_t>>& compile_specs);

// Verifies and parses a payload; never trusts it (bounds, ids, dtypes, byte sizes). The
// returned blob span points into `bytes`, which must outlive the result.
Result<QnnPayload> parse_qnn_payload(std::span<const uint8_t> bytes);

}  // namespace kestrel::qnn
