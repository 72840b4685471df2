// A backend exporter for partitioner and pass-manager tests: it supports a configurable op set,
// declares the three partitioner options plus a few compile-spec options, and its preprocess
// serializes the subgraph's node ids ("ids=3,4,5;in=2;out=1") and records each subgraph.
#pragma once

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/graph.h"
#include "kestrel/export/options.h"
#include "kestrel/export/partitioner.h"
#include "kestrel/export/pass_manager.h"

namespace kestrel::exporter::testing {

inline std::vector<OptionSpec> test_backend_option_specs() {
  std::vector<OptionSpec> specs;
  specs.push_back({"skip_node_op_set", OptionDestination::kPartitioner, OptionType::kStringSet,
                   std::set<std::string>{}, "ops kept portable", {}});
  specs.push_back({"skip_node_id_set", OptionDestination::kPartitioner, OptionType::kIntSet, std::set<int64_t>{},
                   "node ids kept portable", {}});
  specs.push_back({"skip_mutable_buffer", OptionDestination::kPartitioner, OptionType::kBool, false,
                   "keep buffer writes portable", {}});
  specs.push_back({"soc_model", OptionDestination::kCompileSpec, OptionType::kString, std::string("SM8650"),
                   "target SoC", {"SM8550", "SM8650", "SM8750"}});
  OptionSpec level{"profile_level", OptionDestination::kCompileSpec, OptionType::kInt, int64_t{0},
                   "profiling detail", {}};
  level.min = 0;
  level.max = 3;
  specs.push_back(level);
  specs.push_back({"debug", OptionDestination::kCompileSpec, OptionType::kBool, false, "verbose backend logs", {}});
  return specs;
}

inline std::string payload_text(const std::vector<uint8_t>& payload) {
  return std::string(payload.begin(), payload.end());
}

class TestBackend : public BackendExporter {
 public:
  explicit TestBackend(std::set<std::string> ops = {"add", "mul", "linear"},
                       std::vector<OptionSpec> specs = test_backend_option_specs(), std::string id = "test")
      : id_(std::move(id)), ops_(std::move(ops)), table_(id_, std::move(specs)) {}

  std::string id() const override { return id_; }
  const OptionTable& options() const override { return table_; }
  bool supports(const Graph&, const Node& node) const override { return ops_.count(node.op) > 0; }
  std::vector<std::shared_ptr<Pass>> edge_transforms(const PartitionerOptions&) const override { return transforms; }

  Result<std::map<std::string, std::vector<uint8_t>>> build_compile_specs(
      const OptionMap& options) const override {
    if (fail_compile_specs) return make_error(ErrorCode::kInvalidArgument, "compile specs refused");
    std::map<std::string, std::vector<uint8_t>> specs;
    for (const auto& [name, value] : options) {
      std::string text = option_value_to_string(value);
      specs[name] = std::vector<uint8_t>(text.begin(), text.end());
    }
    return specs;
  }

  Result<std::vector<uint8_t>> preprocess(
      const Graph& subgraph, const std::map<std::string, std::vector<uint8_t>>&) const override {
    if (fail_preprocess) return make_error(ErrorCode::kUnsupported, "preprocess refused");
    subgraphs.push_back(subgraph);
    std::string text = "ids=";
    for (size_t i = 0; i < subgraph.nodes().size(); ++i)
      {
      if (i) text += ",";
      text += std::to_string(subgraph.nodes()[i].id);
    }
    text += fmt::format(";in={}", subgraph.inputs().size());
    text += fmt::format(";out={}", subgraph.outputs().size());
    return std::vector<uint8_t>(text.begin(), text.end());
  }

  std::vector<std::shared_ptr<Pass>> transforms;
  bool fail_preprocess = false;
  bool fail_compile_specs = false;
  mutable std::vector<Graph> subgraphs;  // every subgraph preprocess saw, in order

 private:
  std::string id_;
  std::set<std::string> ops_;
  OptionTable table_;
};

// A pass that runs a function and appends its name to a shared log.
class LambdaPass : public Pass {
 public:
  LambdaPass(std::string name, std::function<Status(Graph&)> fn, std::vector<std::string>* log = nullptr)
      : name_(std::move(name)), fn_(std::move(fn)), log_(log) {}
  std::string name() const override { return name_; }
  Status run(Graph& graph) override {
    if (log_) log_->push_back(name_);
    return fn_ ? fn_(graph) : ok_status();
  }

 private:
  std::string name_;
  std::function<Status(Graph&)> fn_;
  std::vector<std::string>* log_;
};

// Rewrites every node of op `from` into op `to` (same inputs and outputs).
inline std::shared_ptr<Pass> rename_op_pass(std::string from, std::string to, std::vector<std::string>* log = nullptr) {
  return std::make_shared<LambdaPass>(
      "rename_" + from + "_to_" + to,
      [from, to](Graph& graph) {
        for (Node& node : graph.nodes())
          if (node.op == from) node.op = to;
        return ok_status();
      },
      log);
}

// Shape used by the small test graphs.
inline std::vector<int64_t> vec4() { return {1, 4}; }

}  // namespace kestrel::exporter::testing
