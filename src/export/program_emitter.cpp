#include "kestrel/export/program_emitter.h"

#include <memory>
#include <span>

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

using program::ValueKind;

namespace {

uint64_t align_up(uint64_t value) {
  return (value + program::kSegmentAlignment - 1) / program::kSegmentAlignment * program::kSegmentAlignment;
}

// The constants' segment: every entry at its 64-byte aligned offset, zeros between them. Entries
// are produced one at a time while the writer streams the segment, so only one converted tensor
// (or a chunk of one) is in memory at a time.
class ConstantSegment final : public program::ByteSource {
 public:
  struct Piece {
    std::string name;
    uint64_t offset = 0;
    std::shared_ptr<const ConstantData> data;
  };
  ConstantSegment(std::vector<Piece> pieces, uint64_t size) : pieces_(std::move(pieces)), size_(size) {}

  uint64_t size() const override { return size_; }

  Status write_to(const program::ByteSink& sink) const override {
    static constexpr uint8_t kZeros[program::kSegmentAlignment] = {};
    uint64_t cursor = 0;
    for (const Piece& piece : pieces_) {
      if (piece.offset > cursor) KESTREL_RETURN_IF_ERROR(sink({kZeros, static_cast<size_t>(piece.offset - cursor)}));
      uint64_t produced = 0;
      auto status = piece.data->write_to([&](std::span<const uint8_t> chunk) {
        produced += chunk.size();
        return sink(chunk);
      });
      if (status.ok() && produced != piece.data->size())
        status = make_error(ErrorCode::kInternal, "produced {} bytes of the {} it declared", produced,
                            piece.data->size());
      if (!status.ok()) return status.error().with_context(fmt::format("constant '{}'", piece.name));
      cursor = piece.offset + produced;
    }
    return ok_status();
  }

 private:
  std::vector<Piece> pieces_;
  uint64_t size_;
};

}  // namespace

Status ProgramEmitter::add_constants(const ConstantTable& table, program::ProgramSpec& program) {
  const auto segment = static_cast<uint32_t>(program.segments.size());
  std::vector<ConstantSegment::Piece> pieces;
  uint64_t offset = 0;
  for (const auto& entry : table.entries()) {
    offset = align_up(offset);
    const uint64_t nbytes = entry.data->size();
    constants_[entry.name] = program::ConstantRef{segment, offset, nbytes};
    pieces.push_back({entry.name, offset, entry.data});
    offset += nbytes;
  }
  program.segments.emplace_back(std::make_shared<const ConstantSegment>(std::move(pieces), offset));
  return ok_status();
}

Result<program::MethodSpec> ProgramEmitter::emit_method(const std::string& name, const Graph& graph,
                                                        const MemoryPlan& plan, program::ProgramSpec& program) {
  program::MethodSpec method;
  method.name = name;
  method.arena_bytes = plan.arena_bytes;
  std::vector<int32_t> index_of(graph.values().size(), -1);
  std::vector<bool> is_output(graph.values().size(), false);
  for (ValueId id : graph.outputs()) is_output[id] = true;

  auto add_value = [&](ValueId id) -> Result<int32_t> {
    if (index_of[id] >= 0) return index_of[id];
    const Value& value = graph.value(id);
    program::ValueSpec spec;
    spec.name = value.name;
    spec.dtype = value.dtype;
    spec.shape = value.shape;
    if (value.input_kind == InputKind::kParameter || value.input_kind == InputKind::kConstant) {
      auto it = constants_.find(value.name);
      if (it == constants_.end())
        return make_error(ErrorCode::kInternal, "method '{}': constant '{}' was not lifted", name, value.name);
      spec.kind = ValueKind::kConstant;
      spec.constant = it->second;
    } else if (value.input_kind != InputKind::kNone) {
      spec.kind = ValueKind::kInput;
    } else if (is_output[id]) {
      // Outputs are bound by the caller, so an output that aliases another value is
      // materialized instead: its producer (reshape, index_copy) then writes a copy.
      spec.kind = ValueKind::kOutput;
    } else if (value.alias_of >= 0) {
      spec.kind = ValueKind::kAlias;  // alias_of is filled below, once the target has an index
    } else {
      auto it = plan.offsets.find(id);
      if (it == plan.offsets.end())
        return make_error(ErrorCode::kInternal, "method '{}': value '{}' has no arena offset", name, value.name);
      spec.kind = ValueKind::kIntermediate;
      spec.arena_offset = it->second;
    }
    index_of[id] = static_cast<int32_t>(method.values.size());
    method.values.push_back(std::move(spec));
    return index_of[id];
  };

  for (ValueId id : graph.inputs()) {
    const InputKind kind = graph.value(id).input_kind;
    if (kind != InputKind::kUser && kind != InputKind::kBuffer) continue;
    KESTREL_ASSIGN_OR_RETURN(int32_t index, add_value(id));
    method.inputs.push_back(index);
  }
  for (ValueId id : graph.outputs()) {
    KESTREL_ASSIGN_OR_RETURN(int32_t index, add_value(id));
    method.outputs.push_back(index);
  }

  for (const Node& node : graph.nodes()) {
    std::vector<int32_t> inputs, outputs;
    for (ValueId id : node.inputs) {
      KESTREL_ASSIGN_OR_RETURN(int32_t index, add_value(id));
      inputs.push_back(index);
    }
    for (ValueId id : node.outputs) {
      KESTREL_ASSIGN_OR_RETURN(int32_t index, add_value(id));
      outputs.push_back(index);
    }
    // A reshape whose output aliases its input moves no bytes: nothing to run.
    if (node.op == "reshape" && graph.value(node.outputs[0]).alias_of == node.inputs[0] &&
        method.values[outputs[0]].kind == ValueKind::kAlias)
      continue;
    if (node.op == "delegate") {
      const LoweredDelegate& lowered = graph.delegates().at(node.delegate);
      program::DelegateSpec delegate;
      delegate.backend_id = lowered.backend_id;
      delegate.payload_segment = static_cast<uint32_t>(program.segments.size());
      delegate.compile_specs = lowered.compile_specs;
      program.segments.push_back(lowered.payload);
      const auto index = static_cast<uint32_t>(program.delegates.size());
      program.delegates.push_back(std::move(delegate));
      method.instructions.push_back(program::DelegateCall{index, std::move(inputs), std::move(outputs)});
    } else {
      method.instructions.push_back(program::KernelCall{node.op, std::move(inputs), std::move(outputs), node.attrs});
    }
  }
  for (size_t id = 0; id < graph.values().size(); ++id) {
    const int32_t index = index_of[id];
    if (index < 0 || method.values[index].kind != ValueKind::kAlias) continue;
    KESTREL_ASSIGN_OR_RETURN(int32_t target, add_value(graph.value(static_cast<ValueId>(id)).alias_of));
    method.values[index].alias_of = target;
  }
  return method;
}

}  // namespace kestrel::exporter
