// Capability-based partitioning: a backend says which nodes it supports; the partitioner groups
// supported nodes into maximal partitions that keep the graph acyclic and lowers each one
// into a single delegate node.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/options.h"

namespace kestrel::exporter {

class Pass;  // pass_manager.h

struct PartitionerOptions {
  std::set<std::string> skip_node_op_set;
  std::set<int64_t> skip_node_id_set;
  bool skip_mutable_buffer = false;  // keep nodes that write InputKind::kBuffer state portable

  // Why these options keep `node` portable whatever the backend supports ("skip_node_op_set",
  // "skip_node_id_set", "skip_mutable_buffer"), or empty when they do not.
  std::string skip_reason(const Graph& graph, const Node& node) const;
};

// What a backend contributes at export time.
class BackendExporter {
 public:
  virtual ~BackendExporter() = default;
  virtual std::string id() const = 0;
  // The option table the backend accepts (partitioner + compile-spec options).
  virtual const OptionTable& options() const = 0;
  // Whether the backend can run this node (ops, dtypes, shapes).
  virtual bool supports(const Graph& graph, const Node& node) const = 0;
  // Why it cannot (for node listings); only asked about nodes supports() refused.
  virtual std::string unsupported_reason(const Graph& graph, const Node& node) const {
    return "not supported by backend '" + id() + "'";
  }
  // Graph rewrites that make more nodes supportable; run before partitioning, with the
  // partitioner's options (a rewrite must not feed a node those options keep portable with
  // something only the backend can consume).
  virtual std::vector<std::shared_ptr<Pass>> edge_transforms(const PartitionerOptions& options) const { return {}; }
  // Compile specs built from the resolved compile-spec options.
  virtual Result<std::map<std::string, std::vector<uint8_t>>> build_compile_specs(
      const OptionMap& compile_spec_options) const = 0;
  // Lowers one partition (a self-contained subgraph) to the payload the runtime backend reads.
  virtual Result<std::vector<uint8_t>> preprocess(
      const Graph& subgraph, const std::map<std::string, std::vector<uint8_t>>& compile_specs) const = 0;
};


// What the partitioner decided for one node of the graph it was given.
struct NodeDecision {
  NodeId id = -1;
  std::string op;
  std::string output;      // name of the node's first output (to recognise it)
  int partition = -1;      // index of its partition when delegated, else -1
  std::string reason;      // why it stays portable (empty when delegated)
};

struct PartitionReport {
  std::string backend;  // id of the partitioner's backend
  int delegated_nodes = 0;
  int portable_nodes = 0;
  int partitions = 0;
  std::map<std::string, int> portable_ops;  // op -> count of nodes left portable
  std::vector<NodeDecision> nodes;          // every node before partitioning, in graph order
};

class Partitioner {
 public:
  Partitioner(std::shared_ptr<const BackendExporter> backend, PartitionerOptions options,
              std::map<std::string, std::vector<uint8_t>> compile_specs);
  // Routes each option to the partitioner or the compile-spec builder; unknown names and
  // wrong types are errors listing the valid names and the closest match.
  static Result<Partitioner> from_options(std::shared_ptr<const BackendExporter> backend,
                                          const OptionMap& options);

  const BackendExporter& backend() const { return *backend_; }
  const PartitionerOptions& options() const { return options_; }
  const std::map<std::string, std::vector<uint8_t>>& compile_specs() const { return compile_specs_; }
  std::vector<std::shared_ptr<Pass>> edge_transforms() const { return backend_->edge_transforms(options_); }

  // Which node ids would be delegated (capability minus skip sets).
  std::set<NodeId> supported_nodes(const Graph& graph) const;
  // Groups supported nodes into acyclic partitions (each a list of node ids in topo order).
  std::vector<std::vector<NodeId>> find_partitions(const Graph& graph) const;
  // Replaces each partition by one "delegate" node; outputs keep the graph's order.
  Result<PartitionReport> partition(Graph& graph) const;

 private:
  std::shared_ptr<const BackendExporter> backend_;
  PartitionerOptions options_;
  std::map<std::string, std::vector<uint8_t>> compile_specs_;
};

}  // namespace kestrel::exporter
