// Reads the call counters of the libcdsprpc.so shim (tests/shims/cdsprpc_shim.c).
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdint>

namespace kestrel::qnn {

// Mirrors struct cdsprpc_shim_counters in tests/shims/cdsprpc_shim.c.
struct ShimCounters {
  long alloc_calls;
  long alloc2_calls;
  long free_calls;
  long bad_frees;
  long to_fd_calls;
  long failed_allocs;
  long live;
  int last_heap_id;
  uint32_t last_flags;
  uint64_t last_size;
  long heap_id_mismatches;
  long flags_mismatches;
};

class Shim {
 public:
  explicit Shim(const char* path) {
    handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    EXPECT_NE(handle_, nullptr) << dlerror();
    if (!handle_) return;
    get_ = reinterpret_cast<const ShimCounters* (*)()>(dlsym(handle_, "cdsprpc_shim_get_counters"));
    reset_ = reinterpret_cast<void (*)()>(dlsym(handle_, "cdsprpc_shim_reset"));
    reset();
  }
  ~Shim() {
    if (handle_) dlclose(handle_);
  }
  const ShimCounters& counters() const { return *get_(); }
  void reset() { reset_(); }

 private:
  void* handle_ = nullptr;
  const ShimCounters* (*get_)() = nullptr;
  void (*reset_)() = nullptr;
};

}  // namespace kestrel::qnn
