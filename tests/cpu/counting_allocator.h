// This test binary replaces the global operator new and delete with versions that count every
// allocation (on any thread) while a CountAllocations scope is alive. Everything else behaves
// as usual (malloc/free underneath).
#pragma once

#include <cstdint>

namespace kestrel::cpu::testing {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  CountAllocations(const CountAllocations&) = delete;
  CountAllocations& operator=(const CountAllocations&) = delete;
  // Allocations since the scope began.
  int64_t count() const;
};

}  // namespace kestrel::cpu::testing
