#include "kernels/scratch.h"

#include <vector>

namespace kestrel::kernels::detail {

float* scratch_floats(int slot, size_t n) {
  thread_local std::vector<float> buffers[kScratchSlots];
  std::vector<float>& buffer = buffers[slot];
  if (buffer.size() < n) buffer.resize(n);
  return buffer.data();
}

}  // namespace kestrel::kernels::detail
