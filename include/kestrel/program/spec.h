// The plain C++ description of a program: what the writer serializes and what the loader
// returns after verification. Bulk bytes (weights, delegate payloads) live in segments and are
// referred to by index; the loader hands them out as spans into the mapped file.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/program/byte_source.h"

namespace kestrel::program {

inline constexpr uint32_t kProgramVersion = 1;
inline constexpr uint64_t kSegmentAlignment = 64;

// Typed metadata value (program-level) and attribute value (per instruction).
using MetaValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<std::string>>;
using Metadata = std::map<std::string, MetaValue>;
using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;
using Attrs = std::map<std::string, AttrValue>;

enum class ValueKind : uint8_t {
  kInput = 0,         // bound by the caller before execute (never in the arena)
  kOutput = 1,        // bound by the caller before execute (never in the arena)
  kConstant = 2,      // bytes in a segment, shared by all methods, never copied
  kIntermediate = 3,  // lives at arena_offset inside the method's arena
  kAlias = 4,         // shares the storage of value `alias_of` (reshape, in-place update)
};

struct ConstantRef {
  uint32_t segment = 0;
  uint64_t offset = 0;  // from the segment start
  uint64_t nbytes = 0;

  friend bool operator==(const ConstantRef&, const ConstantRef&) = default;
};

struct ValueSpec {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  ValueKind kind = ValueKind::kIntermediate;
  ConstantRef constant;       // kConstant only
  uint64_t arena_offset = 0;  // kIntermediate only
  int32_t alias_of = -1;      // kAlias only: index into MethodSpec::values

  friend bool operator==(const ValueSpec&, const ValueSpec&) = default;
};

struct KernelCall {
  std::string op;
  std::vector<int32_t> inputs;  // indices into MethodSpec::values
  std::vector<int32_t> outputs;
  Attrs attrs;

  friend bool operator==(const KernelCall&, const KernelCall&) = default;
};

struct DelegateCall {
  uint32_t delegate = 0;        // index into ProgramSpec::delegates
  std::vector<int32_t> inputs;  // in the order the delegate's payload expects them
  std::vector<int32_t> outputs; // in exported order: outputs[i] is the delegate's exported output i

  friend bool operator==(const DelegateCall&, const DelegateCall&) = default;
};

using Instruction = std::variant<KernelCall, DelegateCall>;

struct MethodSpec {
  std::string name;
  std::vector<ValueSpec> values;
  std::vector<int32_t> inputs;   // value indices, in the method's I/O order
  std::vector<int32_t> outputs;  // value indices, in the method's I/O order
  std::vector<Instruction> instructions;
  uint64_t arena_bytes = 0;

  friend bool operator==(const MethodSpec&, const MethodSpec&) = default;
};

struct DelegateSpec {
  std::string backend_id;
  uint32_t payload_segment = 0;
  std::map<std::string, std::vector<uint8_t>> compile_specs;

  friend bool operator==(const DelegateSpec&, const DelegateSpec&) = default;
};

// One segment's bytes for the writer: held in memory (payloads, the tokenizer, tests) or a
// ByteSource the writer streams from (an export's constants, produced tensor by tensor).
class Segment {
 public:
  Segment() = default;  // empty
  Segment(std::vector<uint8_t> bytes);  // NOLINT(google-explicit-constructor): held bytes
  Segment(std::initializer_list<uint8_t> bytes) : Segment(std::vector<uint8_t>(bytes)) {}
  explicit Segment(std::shared_ptr<const ByteSource> source) : source_(std::move(source)) {}

  uint64_t size() const { return source_ ? source_->size() : 0; }
  // Null for an empty segment.
  const ByteSource* source() const { return source_.get(); }
  // The bytes when they are held in memory; null for a streamed source.
  const std::vector<uint8_t>* held() const;

  // Equal when both are the same source, or both hold the same bytes.
  friend bool operator==(const Segment& a, const Segment& b);

 private:
  std::shared_ptr<const ByteSource> source_;
};

struct ProgramSpec {
  uint32_t version = kProgramVersion;
  Metadata metadata;
  std::vector<MethodSpec> methods;
  std::vector<DelegateSpec> delegates;
  // Bytes of each segment. Filled for writing; the loader leaves this empty and serves the
  // bytes from the mapped file (LoadedProgram::segment).
  std::vector<Segment> segments;

  friend bool operator==(const ProgramSpec&, const ProgramSpec&) = default;
};

// What a segment holds, for messages: "constants", "payload of delegate 0 ('qnn')", or for a
// segment named by an integer metadata entry "<role>_segment" (the tokenizer's), "<role>";
// "unreferenced" otherwise.
std::string segment_role(const ProgramSpec& spec, uint32_t index);

}  // namespace kestrel::program
