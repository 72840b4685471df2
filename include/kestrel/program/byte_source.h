// Bytes that the program writer streams into a segment. A source may hold its bytes or produce
// them while they are written (constants converted tensor by tensor from a mapped checkpoint), so
// writing a program never needs all of its bytes in memory at once.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::program {

// Receives consecutive chunks of bytes; a chunk is valid only during the call.
using ByteSink = std::function<Status(std::span<const uint8_t>)>;

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // How many bytes write_to passes on; known before any is produced (the file layout needs it).
  virtual uint64_t size() const = 0;
  // Passes exactly size() bytes to `sink`, in order, in one or more chunks. Stops at the first
  // error, its own or the sink's, and returns it.
  virtual Status write_to(const ByteSink& sink) const = 0;
};

// Bytes held in memory.
class HeldBytes final : public ByteSource {
 public:
  explicit HeldBytes(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}
  uint64_t size() const override { return bytes_.size(); }
  Status write_to(const ByteSink& sink) const override {
    return bytes_.empty() ? ok_status() : sink(bytes_);
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace kestrel::program
