// The program-wide table of constants shared by all methods: parameters (weights, by their own
// name, shared between methods) and lifted constants (exporter-folded tables such as rope
// cos/sin or masks, under fresh program-unique names).
//
// Fresh names never reuse one already present: every name in the table (entries and reserved
// names) is reserved, and a lifted name takes max(existing numeric suffix for its prefix) + 1.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"

namespace kestrel::exporter {

struct ConstantEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  std::shared_ptr<const ConstantData> data;
  bool lifted = false;  // made by lift() (a folded constant) rather than add_parameter()
};

class ConstantTable {
 public:
  // Adds a parameter under its own name. The same name with the same dtype, shape and bytes
  // is shared (returns the name); the same name with anything different is an error naming it.
  Result<std::string> add_parameter(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                    std::shared_ptr<const ConstantData> data);
  // Adds a constant under a fresh name "<prefix>_<N>", N = 1 + the largest numeric suffix of
  // any name "<prefix>_<digits>" already in the table (0 when there is none).
  std::string lift(const std::string& prefix, DType dtype, std::vector<int64_t> shape,
                   std::shared_ptr<const ConstantData> data);
  // Marks a name as taken without adding an entry (lift() will not produce it).
  void reserve(const std::string& name);
  bool contains(const std::string& name) const { return names_.count(name) > 0; }
  // The entry with this name, or null.
  const ConstantEntry* find(const std::string& name) const;
  // In insertion order.
  const std::vector<ConstantEntry>& entries() const { return entries_; }

 private:
  std::vector<ConstantEntry> entries_;
  std::map<std::string, size_t> index_;  // name -> entries_ index
  std::set<std::string> names_;          // entries and reserved names
};

// Moves a graph's constants into the program table: every kConstant input is renamed (in the
// graph) to a fresh program-unique name from `prefix` and added; every kParameter input is added
// under its own name (shared with other methods; a clash with different bytes is an error).
// Names of the graph's other values that could collide with a fresh name are reserved first.
Status lift_constants(Graph& graph, ConstantTable& table, const std::string& prefix = "_lifted_constant");

}  // namespace kestrel::exporter
