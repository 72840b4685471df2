#include "kestrel/export/graph.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

std::shared_ptr<const ConstantData> ConstantData::owned(std::vector<uint8_t> data) {
  auto storage = std::make_shared<const std::vector<uint8_t>>(std::move(data));
  const std::span<const uint8_t> bytes(storage->data(), storage->size());
  return view(bytes, std::move(storage));
}

std::shared_ptr<const ConstantData> ConstantData::view(std::span<const uint8_t> bytes,
                                                       std::shared_ptr<const void> keepalive) {
  std::shared_ptr<ConstantData> constant(new ConstantData());
  constant->size_ = bytes.size();
  constant->held_ = bytes;
  constant->keepalive_ = std::move(keepalive);
  return constant;
}

std::shared_ptr<const ConstantData> ConstantData::produced(uint64_t size, Producer producer) {
  std::shared_ptr<ConstantData> constant(new ConstantData());
  constant->size_ = size;
  constant->producer_ = std::move(producer);
  return constant;
}

Status ConstantData::write_to(const program::ByteSink& sink) const {
  if (producer_) return producer_(sink);
  return held_.empty() ? ok_status() : sink(held_);
}

Result<std::vector<uint8_t>> ConstantData::read_all() const {
  if (!producer_) return std::vector<uint8_t>(held_.begin(), held_.end());
  std::vector<uint8_t> bytes;
  bytes.reserve(size_);
  KESTREL_RETURN_IF_ERROR(producer_([&](std::span<const uint8_t> chunk) {
    bytes.insert(bytes.end(), chunk.begin(), chunk.end());
    return ok_status();
  }));
  if (bytes.size() != size_)
    return make_error(ErrorCode::kInternal, "a constant's producer gave {} bytes of the {} it declared", bytes.size(),
                      size_);
  return bytes;
}

int64_t Value::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

ValueId Graph::add_input(std::string name, DType dtype, std::vector<int64_t> shape, InputKind kind,
                         std::shared_ptr<const ConstantData> data) {
  Value value;
  value.id = static_cast<ValueId>(values_.size());
  value.name = std::move(name);
  value.dtype = dtype;
  value.shape = std::move(shape);
  value.input_kind = kind;
  value.producer = -1;
  value.data = std::move(data);
  values_.push_back(std::move(value));
  inputs_.push_back(values_.back().id);
  return values_.back().id;
}

NodeId Graph::add_node(std::string op, std::vector<ValueId> inputs,
                       std::vector<std::tuple<std::string, DType, std::vector<int64_t>>> outputs,
                       program::Attrs attrs) {
  Node node;
  node.id = allocate_node_id();
  node.op = std::move(op);
  node.inputs = std::move(inputs);
  node.attrs = std::move(attrs);
  for (auto& [name, dtype, shape] : outputs) {
    Value value;
    value.id = static_cast<ValueId>(values_.size());
    value.name = std::move(name);
    value.dtype = dtype;
    value.shape = std::move(shape);
    value.input_kind = InputKind::kNone;
    value.producer = node.id;
    node.outputs.push_back(value.id);
    values_.push_back(std::move(value));
  }
  nodes_.push_back(std::move(node));
  return nodes_.back().id;
}

ValueId Graph::add_op(std::string op, std::vector<ValueId> inputs, std::string out_name, DType dtype,
                      std::vector<int64_t> shape, program::Attrs attrs) {
  std::vector<std::tuple<std::string, DType, std::vector<int64_t>>> outputs;
  outputs.emplace_back(std::move(out_name), dtype, std::move(shape));
  add_node(std::move(op), std::move(inputs), std::move(outputs), std::move(attrs));
  return nodes_.back().outputs.front();
}

const Node* Graph::find_node(NodeId id) const {
  for (const Node& node : nodes_)
    if (node.id == id) return &node;
  return nullptr;
}

namespace {

const char* kind_name(InputKind kind) {
  switch (kind) {
    case InputKind::kNone: return "none";
    case InputKind::kUser: return "user";
    case InputKind::kParameter: return "parameter";
    case InputKind::kBuffer: return "buffer";
    case InputKind::kConstant: return "constant";
  }
  return "?";
}

Status check_value_shape(const Value& value) {
  for (int64_t d : value.shape)
    if (d < 0)
      return make_error(ErrorCode::kInvalidArgument, "value {} ('{}') has a negative dimension {}",
                        value.id, value.name, d);
  return ok_status();
}

}  // namespace

Status Graph::validate() const {
  const auto value_count = static_cast<ValueId>(values_.size());
  for (ValueId i = 0; i < value_count; ++i)
    if (values_[i].id != i)
      return make_error(ErrorCode::kInternal, "value at index {} ('{}') has id {}", i,
                        values_[i].name, values_[i].id);

  // defined[v]: the value exists at this point of the node sequence.
  std::vector<bool> defined(values_.size(), false);
  for (ValueId id : inputs_) {
    if (id < 0 || id >= value_count)
      return make_error(ErrorCode::kInvalidArgument, "graph input {} does not exist", id);
    const Value& value = values_[id];
    if (defined[id])
      return make_error(ErrorCode::kInvalidArgument, "value {} ('{}') is listed twice as a graph input",
                        id, value.name);
    if (value.input_kind == InputKind::kNone || value.producer != -1)
      return make_error(ErrorCode::kInvalidArgument,
                        "graph input {} ('{}') has kind {} and producer {}; inputs need an input "
                        "kind and no producer",
                        id, value.name, kind_name(value.input_kind), value.producer);
    if (value.alias_of != -1)
      return make_error(ErrorCode::kInvalidArgument, "graph input {} ('{}') cannot be an alias", id,
                        value.name);
    KESTREL_RETURN_IF_ERROR(check_value_shape(value));
    if (value.data) {
      auto bytes = dtype_storage_bytes(value.dtype, value.numel(),
                                       value.shape.empty() ? 1 : value.shape.back());
      if (!bytes.ok())
        return bytes.error().with_context(fmt::format("graph input {} ('{}')", id, value.name));
      if (*bytes != value.data->size())
        return make_error(ErrorCode::kInvalidArgument,
                          "graph input {} ('{}') holds {} bytes of data but its dtype {} and shape "
                          "need {}",
                          id, value.name, value.data->size(), dtype_name(value.dtype), *bytes);
    }
    defined[id] = true;
  }

  std::unordered_set<NodeId> node_ids;
  for (const Node& node : nodes_) {
    const std::string where = fmt::format("node {} ({})", node.id, node.op);
    if (node.id < 0 || node.id >= next_node_id_)
      return make_error(ErrorCode::kInvalidArgument, "{}: id outside the allocated range [0, {})", where,
                        next_node_id_);
    if (!node_ids.insert(node.id).second)
      return make_error(ErrorCode::kInvalidArgument, "{}: node id {} is used twice", where, node.id);
    if (node.op.empty()) return make_error(ErrorCode::kInvalidArgument, "{}: empty op name", where);
    if (node.op == "delegate") {
      if (node.delegate < 0 || node.delegate >= static_cast<int32_t>(delegates_.size()))
        return make_error(ErrorCode::kInvalidArgument, "{}: delegate index {} outside [0, {})", where,
                          node.delegate, delegates_.size());
    } else if (node.delegate != -1) {
      return make_error(ErrorCode::kInvalidArgument, "{}: only delegate nodes carry a delegate index",
                        where);
    }
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      ValueId id = node.inputs[i];
      if (id < 0 || id >= value_count)
        return make_error(ErrorCode::kInvalidArgument, "{}: input {} refers to value {}, which does not exist",
                          where, i, id);
      if (!defined[id])
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: input {} (value {} '{}') is neither a graph input nor produced by an "
                          "earlier node",
                          where, i, id, values_[id].name);
    }
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      ValueId id = node.outputs[i];
      if (id < 0 || id >= value_count)
        return make_error(ErrorCode::kInvalidArgument, "{}: output {} refers to value {}, which does not exist",
                          where, i, id);
      const Value& value = values_[id];
      if (defined[id])
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: output {} (value {} '{}') is already defined earlier", where, i, id,
                          value.name);
      if (value.producer != node.id || value.input_kind != InputKind::kNone)
        return make_error(ErrorCode::kInvalidArgument,
                          "{}: output {} (value {} '{}') records producer {} and kind {}", where, i, id,
                          value.name, value.producer, kind_name(value.input_kind));
      if (value.alias_of != -1) {
        if (value.alias_of < 0 || value.alias_of >= value_count || value.alias_of == id ||
            !defined[value.alias_of])
          return make_error(ErrorCode::kInvalidArgument,
                            "{}: output value {} ('{}') aliases value {}, which is not defined before "
                            "the node",
                            where, id, value.name, value.alias_of);
      }
      KESTREL_RETURN_IF_ERROR(check_value_shape(value));
    }
    for (ValueId id : node.outputs) defined[id] = true;
  }

  std::set<ValueId> seen_outputs;
  for (size_t i = 0; i < outputs_.size(); ++i) {
    ValueId id = outputs_[i];
    if (id < 0 || id >= value_count)
      return make_error(ErrorCode::kInvalidArgument, "graph output {} refers to value {}, which does not exist",
                        i, id);
    if (!defined[id])
      return make_error(ErrorCode::kInvalidArgument,
                        "graph output {} (value {} '{}') is neither a graph input nor produced by a node",
                        i, id, values_[id].name);
    if (!seen_outputs.insert(id).second)
      return make_error(ErrorCode::kInvalidArgument, "graph output {} (value {} '{}') is listed twice", i,
                        id, values_[id].name);
  }
  return ok_status();
}

std::vector<std::vector<NodeId>> Graph::consumers() const {
  std::vector<std::vector<NodeId>> result(values_.size());
  for (const Node& node : nodes_) {
    for (ValueId id : node.inputs) {
      if (id < 0 || id >= static_cast<ValueId>(values_.size())) continue;
      auto& list = result[id];
      if (list.empty() || list.back() != node.id) {
        if (std::find(list.begin(), list.end(), node.id) == list.end()) list.push_back(node.id);
      }
    }
  }
  return result;
}

}  // namespace kestrel::exporter
