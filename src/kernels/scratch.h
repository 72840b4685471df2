// Per-thread reusable float storage for kernels that convert rows or keep per-row state.
// Buffers grow and never shrink, so steady-state calls do not allocate.
#pragma once

#include <cstddef>

namespace kestrel::kernels::detail {

inline constexpr int kScratchSlots = 4;

// `n` floats of thread-local storage in slot `slot` (0 <= slot < kScratchSlots). A kernel uses
// distinct slots for buffers it needs at the same time; contents do not survive the call.
float* scratch_floats(int slot, size_t n);

}  // namespace kestrel::kernels::detail
