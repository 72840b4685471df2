// Finding a non-finite float (inf or nan) in a buffer, fast enough to run over every step's
// logits.
#pragma once

#include <cstdint>
#include <span>

namespace kestrel {

// The index of the first inf or nan in `values`, or -1 when every value is finite.
int64_t first_non_finite(std::span<const float> values);

}  // namespace kestrel
