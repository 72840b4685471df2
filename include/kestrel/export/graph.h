// The export graph IR: values (tensors) and nodes in topological order.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/program/byte_source.h"
#include "kestrel/program/spec.h"

namespace kestrel::exporter {

using ValueId = int32_t;
using NodeId = int32_t;

// Bytes of a parameter or constant. Held (owned, or a view into a mapped checkpoint kept alive by
// `keepalive`) or produced on demand: a conversion of checkpoint bytes that the program writer
// runs while it streams the constant to the file, so an export never holds every converted
// weight at once.
class ConstantData final : public program::ByteSource {
 public:
  // Produces exactly the declared size, in chunks, into the sink; may run more than once.
  using Producer = std::function<Status(const program::ByteSink&)>;

  static std::shared_ptr<const ConstantData> owned(std::vector<uint8_t> data);
  static std::shared_ptr<const ConstantData> view(std::span<const uint8_t> bytes, std::shared_ptr<const void> keepalive);
  static std::shared_ptr<const ConstantData> produced(uint64_t size, Producer producer);

  uint64_t size() const override { return size_; }
  Status write_to(const program::ByteSink& sink) const override;
  // Held bytes are readable in place; produced ones only through write_to or read_all.
  bool is_held() const { return !producer_; }
  std::span<const uint8_t> held_bytes() const { return held_; }
  // Every byte in one buffer: a copy of held bytes, or the producer's output. For consumers that
  // need a whole tensor at once (tests; backends that embed weights in their payload).
  Result<std::vector<uint8_t>> read_all() const;

 private:
  ConstantData() = default;
  uint64_t size_ = 0;
  std::span<const uint8_t> held_;
  std::shared_ptr<const void> keepalive_;
  Producer producer_;
};

enum class InputKind : uint8_t {
  kNone,       // produced by a node
  kUser,       // supplied by the caller each call (tokens, positions)
  kParameter,  // a weight
  kBuffer,     // state owned by the caller and passed as I/O (KV caches)
  kConstant,   // a folded table made by the exporter (rope tables, masks)
};

struct Value {
  ValueId id = -1;
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  InputKind input_kind = InputKind::kNone;
  NodeId producer = -1;                       // -1 for graph inputs
  std::shared_ptr<const ConstantData> data;   // kParameter and kConstant
  int32_t alias_of = -1;                      // shares storage with this value (reshape, in place)
  int64_t numel() const;
};

struct Node {
  NodeId id = -1;  // stable: never reused, survives passes
  std::string op;
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  program::Attrs attrs;
  // For op "delegate": index into Graph::delegates.
  int32_t delegate = -1;
};

// A lowered partition: backend id, payload and compile specs, filled by the partitioner.
struct LoweredDelegate {
  std::string backend_id;
  std::vector<uint8_t> payload;
  std::map<std::string, std::vector<uint8_t>> compile_specs;
  std::vector<NodeId> original_nodes;  // ids of the nodes it replaced, for reports
};

class Graph {
 public:
  ValueId add_input(std::string name, DType dtype, std::vector<int64_t> shape, InputKind kind,
                    std::shared_ptr<const ConstantData> data = nullptr);
  // Adds a node and its output values; returns the node id.
  NodeId add_node(std::string op, std::vector<ValueId> inputs,
                  std::vector<std::tuple<std::string, DType, std::vector<int64_t>>> outputs,
                  program::Attrs attrs = {});
  // Convenience for single-output nodes: returns the output value id.
  ValueId add_op(std::string op, std::vector<ValueId> inputs, std::string out_name, DType dtype,
                 std::vector<int64_t> shape, program::Attrs attrs = {});
  void mark_output(ValueId value) { outputs_.push_back(value); }

  const Value& value(ValueId id) const { return values_.at(id); }
  Value& value(ValueId id) { return values_.at(id); }
  std::vector<Value>& values() { return values_; }
  const std::vector<Value>& values() const { return values_; }
  // Nodes in topological order; a pass that rewrites must keep the order topological.
  std::vector<Node>& nodes() { return nodes_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node* find_node(NodeId id) const;
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  std::vector<ValueId>& outputs() { return outputs_; }
  std::vector<LoweredDelegate>& delegates() { return delegates_; }
  const std::vector<LoweredDelegate>& delegates() const { return delegates_; }
  NodeId next_node_id() const { return next_node_id_; }
  NodeId allocate_node_id() { return next_node_id_++; }
  // Makes allocate_node_id() return at least `next` (for graphs built with ids taken from
  // another graph, e.g. a partition's subgraph keeps the original node ids).
  void reserve_node_ids(NodeId next) { next_node_id_ = next > next_node_id_ ? next : next_node_id_; }

  // Checks ids, producers and topological order; error names the offending node.
  Status validate() const;
  // Nodes that consume each value (recomputed on call).
  std::vector<std::vector<NodeId>> consumers() const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_;
  std::vector<ValueId> outputs_;
  std::vector<LoweredDelegate> delegates_;
  NodeId next_node_id_ = 0;
};

}  // namespace kestrel::exporter
