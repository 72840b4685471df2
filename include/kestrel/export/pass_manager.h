// Runs graph passes in a fixed order: caller-supplied passes first, then each partitioner's
// backend-contributed edge transforms, then partitioning.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/partitioner.h"

namespace kestrel::exporter {

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string name() const = 0;
  virtual Status run(Graph& graph) = 0;
};

struct PipelineReport {
  std::vector<std::string> executed;     // "pass:<name>", "transform:<backend>:<name>", "partition:<backend>"
  std::vector<PartitionReport> partitions;  // one per partitioner, in order
};

class PassManager {
 public:
  void add_pass(std::shared_ptr<Pass> pass) { passes_.push_back(std::move(pass)); }
  void add_partitioner(std::shared_ptr<const Partitioner> partitioner) {
    partitioners_.push_back(std::move(partitioner));
  }
  // Caller passes, then every partitioner's edge transforms, then each partitioner in turn.
  // Validates the graph after each step; an error names the pass that broke it.
  Result<PipelineReport> run(Graph& graph) const;

 private:
  std::vector<std::shared_ptr<Pass>> passes_;
  std::vector<std::shared_ptr<const Partitioner>> partitioners_;
};

}  // namespace kestrel::exporter
