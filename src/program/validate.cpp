#include "kestrel/program/validate.h"

#include <fmt/format.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/tensor.h"
#include "program/format.h"

namespace kestrel::program {

namespace {

using format::kMaxValueKind;
using format::shape_text;

const char* kind_name(ValueKind kind) {
  switch (kind) {
    case ValueKind::kInput: return "an input";
    case ValueKind::kOutput: return "an output";
    case ValueKind::kConstant: return "a constant";
    case ValueKind::kIntermediate: return "an intermediate";
    case ValueKind::kAlias: return "an alias";
  }
  return "of an unknown kind";
}

class MethodChecker {
 public:
  MethodChecker(const ProgramSpec& program, const MethodSpec& method, std::span<const uint64_t> segment_sizes,
                ErrorCode malformed)
      : program_(program), method_(method), segment_sizes_(segment_sizes), malformed_(malformed) {}

  Status check() {
    storage_.assign(method_.values.size(), 0);
    for (size_t i = 0; i < method_.values.size(); ++i) KESTREL_RETURN_IF_ERROR(check_value(i));
    KESTREL_RETURN_IF_ERROR(check_arena_size());
    KESTREL_RETURN_IF_ERROR(resolve_aliases());
    KESTREL_RETURN_IF_ERROR(check_io("input", method_.inputs, ValueKind::kInput));
    KESTREL_RETURN_IF_ERROR(check_io("output", method_.outputs, ValueKind::kOutput));
    for (size_t i = 0; i < method_.instructions.size(); ++i) KESTREL_RETURN_IF_ERROR(check_instruction(i));
    return ok_status();
  }

 private:
  template <typename... Args>
  Error value_error(ErrorCode code, size_t index, fmt::format_string<Args...> format, Args&&... args) const {
    return Error(code, fmt::format("method '{}', value {} '{}': {}", method_.name, index, method_.values[index].name,
                                   fmt::format(format, std::forward<Args>(args)...)));
  }

  Status check_value(size_t index) {
    const ValueSpec& value = method_.values[index];
    if (static_cast<uint32_t>(value.kind) > kMaxValueKind)
      return value_error(malformed_, index, "unknown value kind {}", static_cast<uint32_t>(value.kind));
    auto bytes = value_storage_bytes(value);
    if (!bytes.ok()) return value_error(malformed_, index, "{}", bytes.error().message());
    storage_[index] = *bytes;
    const uint64_t alignment = value_alignment(value.dtype);
    switch (value.kind) {
      case ValueKind::kConstant: {
        const ConstantRef& ref = value.constant;
        if (ref.segment >= segment_sizes_.size())
          return value_error(ErrorCode::kOutOfRange, index, "constant segment {} is out of range (the program has {} segments)",
                             ref.segment, segment_sizes_.size());
        const uint64_t segment_size = segment_sizes_[ref.segment];
        if (ref.offset > segment_size || ref.nbytes > segment_size - ref.offset)
          return value_error(ErrorCode::kOutOfRange, index,
                             "constant bytes [{}, {}+{}) are outside segment {} ({} bytes)", ref.offset, ref.offset,
                             ref.nbytes, ref.segment, segment_size);
        if (ref.nbytes != *bytes)
          return value_error(malformed_, index, "tensor '{}' has {} bytes but shape {} {} needs {}", value.name,
                             ref.nbytes, shape_text(value.shape), dtype_name(value.dtype), *bytes);
        if (ref.offset % alignment != 0)
          return value_error(malformed_, index, "constant offset {} in segment {} is not a multiple of {} ({})",
                             ref.offset, ref.segment, alignment, dtype_name(value.dtype));
        break;
      }
      case ValueKind::kIntermediate:
        if (value.arena_offset > method_.arena_bytes || *bytes > method_.arena_bytes - value.arena_offset)
          return value_error(ErrorCode::kOutOfRange, index,
                             "intermediate bytes [{}, {}+{}) are outside the method's arena ({} bytes)",
                             value.arena_offset, value.arena_offset, *bytes, method_.arena_bytes);
        if (value.arena_offset % alignment != 0)
          return value_error(malformed_, index, "arena offset {} is not a multiple of {} ({})", value.arena_offset,
                             alignment, dtype_name(value.dtype));
        break;
      case ValueKind::kAlias:
        if (value.alias_of < 0 || static_cast<size_t>(value.alias_of) >= method_.values.size())
          return value_error(ErrorCode::kOutOfRange, index, "alias_of {} is out of range (the method has {} values)",
                             value.alias_of, method_.values.size());
        if (static_cast<size_t>(value.alias_of) == index)
          return value_error(malformed_, index, "value aliases itself");
        break;
      case ValueKind::kInput:
      case ValueKind::kOutput:
        break;
    }
    return ok_status();
  }

  // A memory plan never needs more than its intermediates laid end to end (each rounded up to
  // kArenaAlignment): a larger arena_bytes is refused here, before anyone allocates it.
  Status check_arena_size() const {
    uint64_t bound = 0;
    size_t intermediates = 0;
    for (size_t i = 0; i < method_.values.size(); ++i) {
      if (method_.values[i].kind != ValueKind::kIntermediate) continue;
      ++intermediates;
      const uint64_t rounded = storage_[i] / kArenaAlignment * kArenaAlignment +
                               (storage_[i] % kArenaAlignment != 0 ? kArenaAlignment : 0);
      if (__builtin_add_overflow(bound, rounded, &bound)) return ok_status();  // nothing is larger
    }
    if (method_.arena_bytes > bound)
      return make_error(malformed_,
                        "method '{}': arena_bytes {} is more than its {} intermediates can use ({} bytes, each "
                        "rounded up to {})",
                        method_.name, method_.arena_bytes, intermediates, bound, kArenaAlignment);
    return ok_status();
  }

  // Runs after every value passed check_value, so alias_of indices are in range. Resolves each
  // value's storage root in one pass over the values (linear even for long chains).
  Status resolve_aliases() {
    const size_t n = method_.values.size();
    constexpr size_t kUnresolved = SIZE_MAX, kInProgress = SIZE_MAX - 1;
    roots_.assign(n, kUnresolved);
    std::vector<size_t> path;
    for (size_t start = 0; start < n; ++start) {
      path.clear();
      size_t at = start;
      while (roots_[at] == kUnresolved && method_.values[at].kind == ValueKind::kAlias) {
        roots_[at] = kInProgress;
        path.push_back(at);
        at = static_cast<size_t>(method_.values[at].alias_of);
      }
      if (roots_[at] == kInProgress) return value_error(malformed_, start, "alias chain is a cycle");
      const size_t root = roots_[at] == kUnresolved ? at : roots_[at];
      roots_[at] = root;
      for (size_t index : path) roots_[index] = root;
    }
    for (size_t index = 0; index < n; ++index) {
      const size_t root = roots_[index];
      if (root != index && storage_[index] > storage_[root])
        return value_error(malformed_, index, "alias needs {} bytes but its storage '{}' (value {}) has {}",
                           storage_[index], method_.values[root].name, root, storage_[root]);
    }
    return ok_status();
  }

  Status check_io(const char* what, const std::vector<int32_t>& list, ValueKind kind) {
    std::vector<bool> listed(method_.values.size(), false);
    for (size_t i = 0; i < list.size(); ++i) {
      const int32_t index = list[i];
      if (index < 0 || static_cast<size_t>(index) >= method_.values.size())
        return make_error(ErrorCode::kOutOfRange, "method '{}', {} {}: value index {} is out of range (the method has {} values)",
                          method_.name, what, i, index, method_.values.size());
      const ValueSpec& value = method_.values[index];
      if (value.kind != kind)
        return make_error(malformed_, "method '{}', {} {}: value {} '{}' is {}, not {}", method_.name, what, i, index,
                          value.name, kind_name(value.kind), kind_name(kind));
      if (listed[index])
        return make_error(malformed_, "method '{}', {} {}: value {} '{}' is listed twice", method_.name, what, i, index,
                          value.name);
      listed[index] = true;
    }
    for (size_t i = 0; i < method_.values.size(); ++i)
      if (method_.values[i].kind == kind && !listed[i])
        return make_error(malformed_, "method '{}', value {} '{}': {} value not listed in the method's {}s",
                          method_.name, i, method_.values[i].name, kind_name(kind), what);
    return ok_status();
  }

  Status check_operands(size_t instruction, const std::string& label, const char* what,
                        const std::vector<int32_t>& operands, bool written) {
    for (size_t i = 0; i < operands.size(); ++i) {
      const int32_t index = operands[i];
      if (index < 0 || static_cast<size_t>(index) >= method_.values.size())
        return make_error(ErrorCode::kOutOfRange,
                          "method '{}', instruction {} ({}): {} {} is value {}, out of range (the method has {} values)",
                          method_.name, instruction, label, what, i, index, method_.values.size());
      if (written && method_.values[roots_[index]].kind == ValueKind::kConstant)
        return make_error(malformed_, "method '{}', instruction {} ({}): {} {} writes constant '{}'", method_.name,
                          instruction, label, what, i, method_.values[roots_[index]].name);
    }
    return ok_status();
  }

  Status check_instruction(size_t index) {
    const Instruction& instruction = method_.instructions[index];
    if (const auto* call = std::get_if<KernelCall>(&instruction)) {
      const std::string label = fmt::format("kernel '{}'", call->op);
      if (call->op.empty())
        return make_error(malformed_, "method '{}', instruction {}: kernel call without an op name", method_.name, index);
      KESTREL_RETURN_IF_ERROR(check_operands(index, label, "input", call->inputs, false));
      KESTREL_RETURN_IF_ERROR(check_operands(index, label, "output", call->outputs, true));
      return ok_status();
    }
    const auto& call = std::get<DelegateCall>(instruction);
    if (call.delegate >= program_.delegates.size())
      return make_error(ErrorCode::kOutOfRange,
                        "method '{}', instruction {}: delegate {} is out of range (the program has {} delegates)",
                        method_.name, index, call.delegate, program_.delegates.size());
    const std::string label = fmt::format("delegate {} '{}'", call.delegate, program_.delegates[call.delegate].backend_id);
    KESTREL_RETURN_IF_ERROR(check_operands(index, label, "input", call.inputs, false));
    KESTREL_RETURN_IF_ERROR(check_operands(index, label, "output", call.outputs, true));
    return ok_status();
  }

  const ProgramSpec& program_;
  const MethodSpec& method_;
  std::span<const uint64_t> segment_sizes_;
  ErrorCode malformed_;
  std::vector<uint64_t> storage_;
  std::vector<size_t> roots_;  // the value whose storage each value uses (itself unless an alias)
};

}  // namespace

uint64_t value_alignment(DType dtype) {
  if (dtype == DType::kQ8) return 2;
  const size_t size = dtype_element_size(dtype);
  return size == 0 ? 1 : size;
}

Result<uint64_t> value_storage_bytes(const ValueSpec& value) {
  if (!dtype_is_valid(static_cast<uint32_t>(value.dtype)))
    return make_error(ErrorCode::kInvalidArgument, "invalid dtype {}", static_cast<uint32_t>(value.dtype));
  if (value.shape.size() > static_cast<size_t>(kMaxRank))
    return make_error(ErrorCode::kInvalidArgument, "shape {} has rank {}, more than the maximum {}",
                      shape_text(value.shape), value.shape.size(), kMaxRank);
  int64_t numel = 1;
  for (int64_t dim : value.shape) {
    if (dim < 0)
      return make_error(ErrorCode::kInvalidArgument, "shape {} has a negative dimension", shape_text(value.shape));
    if (__builtin_mul_overflow(numel, dim, &numel))
      return make_error(ErrorCode::kInvalidArgument, "shape {} has too many elements", shape_text(value.shape));
  }
  // Keep the byte count (at most 8 bytes per element) inside 63 bits.
  if (numel > (INT64_MAX >> 3))
    return make_error(ErrorCode::kInvalidArgument, "shape {} has too many elements", shape_text(value.shape));
  const int64_t last_dim = value.shape.empty() ? 1 : value.shape.back();
  auto bytes = dtype_storage_bytes(value.dtype, numel, last_dim);
  if (!bytes.ok())
    return make_error(ErrorCode::kInvalidArgument, "shape {} {}: {}", shape_text(value.shape), dtype_name(value.dtype),
                      bytes.error().message());
  return static_cast<uint64_t>(*bytes);
}

Status validate_program(const ProgramSpec& spec, std::span<const uint64_t> segment_sizes, ErrorCode malformed) {
  if (spec.version != kProgramVersion)
    return make_error(ErrorCode::kUnsupported, "program version {} is not supported (this build reads version {})",
                      spec.version, kProgramVersion);
  std::set<std::string_view> names;
  for (size_t m = 0; m < spec.methods.size(); ++m) {
    const MethodSpec& method = spec.methods[m];
    if (method.name.empty()) return make_error(malformed, "method {} has an empty name", m);
    if (!names.insert(method.name).second)
      return make_error(malformed, "method {}: two methods are named '{}'", m, method.name);
    KESTREL_RETURN_IF_ERROR(MethodChecker(spec, method, segment_sizes, malformed).check());
  }
  for (size_t d = 0; d < spec.delegates.size(); ++d) {
    const DelegateSpec& delegate = spec.delegates[d];
    if (delegate.backend_id.empty()) return make_error(malformed, "delegate {} has an empty backend id", d);
    if (delegate.payload_segment >= segment_sizes.size())
      return make_error(ErrorCode::kOutOfRange,
                        "delegate {} ('{}'): payload segment {} is out of range (the program has {} segments)", d,
                        delegate.backend_id, delegate.payload_segment, segment_sizes.size());
  }
  return ok_status();
}

Status validate_program(const ProgramSpec& spec) {
  std::vector<uint64_t> sizes;
  sizes.reserve(spec.segments.size());
  for (const auto& segment : spec.segments) sizes.push_back(segment.size());
  return validate_program(spec, sizes);
}

}  // namespace kestrel::program
