// An IOManager drives a program's methods under the I/O contract the program declares
// (metadata io_contract + io_contract_version). The runner picks one from the registry and
// never looks at backends or method I/O itself.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/runtime/buffer_allocator.h"
#include "kestrel/runtime/method.h"

namespace kestrel::llm {

// What a contract tells the runner about the model.
struct ModelInfo {
  int64_t vocab_size = 0;
  int64_t max_context = 0;
  int64_t bos_id = -1;
  std::vector<int64_t> eos_ids;
};

// What an IOManager did so far, counted where it happens.
struct IoStats {
  int64_t prefill_calls = 0;
  int64_t decode_calls = 0;
  int64_t prefill_cache_bytes_copied = 0;  // bytes the manager copied into the caches after calls
  int64_t decode_cache_bytes_copied = 0;
};

class IOManager {
 public:
  virtual ~IOManager() = default;
  // Validates the program against the contract, loads its methods and binds their I/O to
  // buffers from `allocator`. Nothing runs before this succeeds.
  virtual Status load(std::shared_ptr<const runtime::Program> program,
                      std::shared_ptr<runtime::BufferAllocator> allocator) = 0;
  virtual const ModelInfo& model_info() const = 0;
  // Runs `tokens` at positions [start, start + tokens.size()) and returns the logits of the
  // last token. The caller has checked capacity: start + tokens.size() <= max_context.
  virtual Result<std::span<const float>> forward(std::span<const int64_t> tokens, int64_t start) = 0;
  // Clears the caches.
  virtual void reset() = 0;
  virtual IoStats io_stats() const { return {}; }
  // The loaded methods (for per-instruction profiling); none before load().
  virtual std::vector<runtime::Method*> methods() { return {}; }
};

using IOManagerFactory = std::function<std::unique_ptr<IOManager>()>;

class IOManagerRegistry {
 public:
  // The process-wide registry, with hf_static version 1 registered.
  static IOManagerRegistry& global();
  void add(const std::string& contract, int64_t version, IOManagerFactory factory);
  // Error naming the contract and version and listing the registered ones when absent.
  Result<std::unique_ptr<IOManager>> create(const std::string& contract, int64_t version) const;
  // Reads io_contract and io_contract_version from the program's metadata and creates its manager.
  Result<std::unique_ptr<IOManager>> create_for(const runtime::Program& program) const;
  std::vector<std::string> registered() const;  // "hf_static v1", ...

 private:
  std::map<std::pair<std::string, int64_t>, IOManagerFactory> factories_;
};

}  // namespace kestrel::llm
