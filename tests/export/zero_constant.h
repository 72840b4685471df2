// A constant of `count` zero floats, for graphs whose values no test reads.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kestrel/export/graph.h"

namespace kestrel::exporter::testing {

inline std::shared_ptr<const ConstantData> zero_floats(size_t count) {
  return ConstantData::owned(std::vector<uint8_t>(count * 4, 0));
}

}  // namespace kestrel::exporter::testing
