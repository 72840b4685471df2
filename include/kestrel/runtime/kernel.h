// Kernels are plain functions looked up by op name when a method loads.
#pragma once

#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/program/spec.h"

namespace kestrel::runtime {

// Read access to an instruction's attributes with clear errors for missing or mistyped ones.
class AttrReader {
 public:
  AttrReader(std::string_view op, const program::Attrs& attrs) : op_(op), attrs_(attrs) {}
  Result<int64_t> get_int(const std::string& name) const;
  int64_t get_int_or(const std::string& name, int64_t fallback) const;
  Result<double> get_float(const std::string& name) const;  // accepts an int attr too
  double get_float_or(const std::string& name, double fallback) const;
  Result<std::string> get_string(const std::string& name) const;
  std::string get_string_or(const std::string& name, const std::string& fallback) const;
  Result<std::vector<int64_t>> get_ints(const std::string& name) const;
  bool has(const std::string& name) const { return attrs_.count(name) != 0; }

 private:
  std::string_view op_;
  const program::Attrs& attrs_;
};

struct KernelContext {
  std::string_view op;
  std::span<const TensorView> inputs;
  std::span<TensorView> outputs;
  AttrReader attrs;
};

using KernelFn = Status (*)(KernelContext& ctx);

class KernelRegistry {
 public:
  // Registering a name twice replaces the earlier kernel (an optimized set overrides portable).
  void add(std::string op, KernelFn fn) { kernels_[std::move(op)] = fn; }
  // Error naming the op (and the closest registered name) when it is absent.
  Result<KernelFn> find(std::string_view op) const;
  std::vector<std::string> names() const;

 private:
  std::map<std::string, KernelFn, std::less<>> kernels_;
};

}  // namespace kestrel::runtime
