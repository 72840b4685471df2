// Consistency checks on a ProgramSpec, shared by the writer (before serializing) and the loader
// (after decoding a file). Kernel and backend names are not checked here: the runtime resolves
// them when it loads a method.
#pragma once

#include <cstdint>
#include <span>

#include "kestrel/core/result.h"
#include "kestrel/program/spec.h"

namespace kestrel::program {

// Bytes a value of this dtype and shape occupies (q8 counts blocks). Errors for an invalid
// dtype, a negative dimension, a rank above kMaxRank, a q8 last axis that is not a multiple of
// kQ8BlockSize, or a size that overflows 64 bits.
Result<uint64_t> value_storage_bytes(const ValueSpec& value);

// The alignment, in bytes, that a constant's or an intermediate's offset must have: the element
// size (2 for q8, whose blocks start with an f16 scale).
uint64_t value_alignment(DType dtype);

// The alignment the arena bound assumes for each intermediate (memory planners round up to it).
inline constexpr uint64_t kArenaAlignment = 64;

// Checks everything that does not need the file: program version; per method: a unique,
// non-empty name, every value's dtype/kind/shape, constants inside their segment (offset and
// nbytes within segment_sizes[segment], nbytes equal to the shape's storage bytes, offset
// aligned), intermediates inside arena_bytes, arena_bytes no more than the intermediates' sizes
// rounded up to kArenaAlignment and summed, aliases in range, not to themselves and not in a
// cycle, and no larger than their storage; inputs/outputs in range, of kind input/output,
// unique, and every input/output value listed; every instruction's value indices in range, no
// instruction writing a constant, delegate indices in range; per delegate: a backend id and a
// payload segment in range.
//
// Index and offset errors are ErrorCode::kOutOfRange; all others use `malformed` (the writer
// passes kInvalidArgument, the loader kCorrupt), except an unknown program version, which is
// kUnsupported.
Status validate_program(const ProgramSpec& spec, std::span<const uint64_t> segment_sizes,
                        ErrorCode malformed = ErrorCode::kInvalidArgument);
// The same, with the segment sizes taken from spec.segments.
Status validate_program(const ProgramSpec& spec);

}  // namespace kestrel::program
