#include "kestrel/core/finite.h"

#include <cmath>
#include <cstring>

namespace kestrel {

int64_t first_non_finite(std::span<const float> values) {
  // One OR over "the exponent bits are all ones" (inf and nan only), which compiles to vector
  // code; only a failed scan looks for the place.
  constexpr uint32_t kExponent = 0x7f800000u;
  uint32_t any = 0;
  for (const float value : values) {
    uint32_t bits;
    std::memcpy(&bits, &value, sizeof(bits));
    any |= static_cast<uint32_t>((bits & kExponent) == kExponent);
  }
  if (any == 0) return -1;
  for (size_t i = 0; i < values.size(); ++i)
    if (!std::isfinite(values[i])) return static_cast<int64_t>(i);
  return -1;
}

}  // namespace kestrel
