#include "program/checksum.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value
#include <xxhash.h>
#if defined(__x86_64__) || defined(__i386__)
// The library's run-time choice of SSE2, AVX2 or AVX-512 for the same hash: a load checks every
// byte of the file, and the plain entry points (SSE2) hashed at 5 GB/s where AVX2 reached 8.5
// (a 64 MiB buffer, one thread).
#include <xxh_x86dispatch.h>
#endif

namespace kestrel::program::format {

uint64_t checksum(std::span<const uint8_t> bytes) { return XXH3_64bits(bytes.data(), bytes.size()); }

struct StreamingChecksum::State {
  XXH3_state_t xxh3;
};

StreamingChecksum::StreamingChecksum() : state_(std::make_unique<State>()) { reset(); }
StreamingChecksum::~StreamingChecksum() = default;

void StreamingChecksum::reset() { XXH3_64bits_reset(&state_->xxh3); }

void StreamingChecksum::update(std::span<const uint8_t> bytes) {
  XXH3_64bits_update(&state_->xxh3, bytes.data(), bytes.size());
}

uint64_t StreamingChecksum::digest() const { return XXH3_64bits_digest(&state_->xxh3); }

}  // namespace kestrel::program::format
