// The checksum of the program file's description and segments: XXH3, 64 bits (xxhash).
#pragma once

#include <cstdint>
#include <memory>
#include <span>

namespace kestrel::program::format {

inline constexpr char kChecksumName[] = "xxh3-64";

uint64_t checksum(std::span<const uint8_t> bytes);

// The same checksum over bytes that arrive in pieces.
class StreamingChecksum {
 public:
  StreamingChecksum();
  ~StreamingChecksum();
  StreamingChecksum(const StreamingChecksum&) = delete;
  StreamingChecksum& operator=(const StreamingChecksum&) = delete;

  void reset();
  void update(std::span<const uint8_t> bytes);
  uint64_t digest() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kestrel::program::format
