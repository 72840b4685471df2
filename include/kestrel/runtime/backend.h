// Backends run delegated subgraphs. They register by id; a program names the id it needs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"

namespace kestrel::runtime {

using CompileSpecs = std::map<std::string, std::vector<uint8_t>>;

// What init hands back. The backend enumerates its graph outputs in its own order;
// `output_order[k]` is the exported output index of the k-th output the backend reports.
// The runtime maps by that index, so outputs land in the exported program's order.
struct DelegateInstance {
  void* handle = nullptr;
  std::vector<int32_t> output_order;
};

// What init learns about the method around a delegate, besides its payload and compile specs.
// Weights stay in the program's shared, mapped constant segment: a backend builds its static
// tensors from these views (valid as long as the delegate lives) instead of carrying copies in
// its payload, so every method's delegates share one copy. Inputs are matched by position
// because constants are named program-wide only after partitioning (lifted names).
struct DelegateContext {
  std::string method;  // the calling method
  // Per delegate input, in payload order: a view of the program constant wired to it, or a
  // view with null data when the input is bound or computed at run time.
  std::vector<TensorView> constants;
  // Per delegate input and per exported output: the index of the method input or output it
  // is (a caller-owned buffer, which the caller's allocator may have registered), or -1.
  std::vector<int32_t> method_inputs;
  std::vector<int32_t> method_outputs;

  // The constant wired to delegate input `index`, or null.
  const TensorView* constant(size_t index) const {
    return index < constants.size() && constants[index].data != nullptr ? &constants[index] : nullptr;
  }
};

class BackendInterface {
 public:
  virtual ~BackendInterface() = default;
  virtual std::string_view id() const = 0;
  // Ok when usable on this machine; otherwise an error saying why (missing library, ...).
  virtual Status is_available() const = 0;
  virtual Result<DelegateInstance> init(std::span<const uint8_t> payload, const CompileSpecs& compile_specs,
                                        const DelegateContext& context) = 0;
  // `inputs` in payload order; `outputs` in the order the backend reported at init.
  virtual Status execute(void* handle, std::span<const TensorView> inputs,
                         std::span<const TensorView> outputs) = 0;
  virtual void destroy(void* handle) = 0;
};

class BackendRegistry {
 public:
  void add(std::shared_ptr<BackendInterface> backend);
  // Error naming the id and listing the registered ones when it is absent.
  Result<std::shared_ptr<BackendInterface>> find(std::string_view id) const;
  std::vector<std::string> ids() const;

 private:
  std::map<std::string, std::shared_ptr<BackendInterface>, std::less<>> backends_;
};

}  // namespace kestrel::runtime
