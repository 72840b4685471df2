// Turns planned method graphs and the program's constant table into a ProgramSpec.
#pragma once

#include <map>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/export/constant_table.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/memory_planner.h"
#include "kestrel/program/spec.h"

namespace kestrel::exporter {

class ProgramEmitter {
 public:
  // Packs every constant of `table` into one 64-byte aligned segment of `program`.
  Status add_constants(const ConstantTable& table, program::ProgramSpec& program);
  // Emits one method: user and buffer inputs become method inputs (in graph order), graph
  // outputs method outputs, constants refer to the packed segment, intermediates get their
  // planned arena offsets, zero-copy reshapes disappear, delegate nodes become DelegateCalls.
  Result<program::MethodSpec> emit_method(const std::string& name, const Graph& graph, const MemoryPlan& plan,
                                          program::ProgramSpec& program);

 private:
  std::map<std::string, program::ConstantRef> constants_;
};

}  // namespace kestrel::exporter
