#include "kestrel/export/pass_manager.h"

#include "kestrel/core/error_helpers.h"

namespace kestrel::exporter {

namespace {

Status run_step(Graph& graph, Pass& pass, const std::string& label) {
  if (auto status = pass.run(graph); !status.ok()) return status.error().with_context(label + " failed");
  if (auto status = graph.validate(); !status.ok())
    return status.error().with_context(label + " left an invalid graph");
  return ok_status();
}

}  // namespace

Result<PipelineReport> PassManager::run(Graph& graph) const {
  if (auto status = graph.validate(); !status.ok())
    return status.error().with_context("graph is invalid before any pass");

  PipelineReport report;
  for (const auto& pass : passes_) {
    if (!pass) return make_error(ErrorCode::kInvalidArgument, "pass manager holds a null pass");
    const std::string label = "pass:" + pass->name();
    KESTREL_RETURN_IF_ERROR(run_step(graph, *pass, fmt::format("pass '{}'", pass->name())));
    report.executed.push_back(label);
  }
  for (const auto& partitioner : partitioners_) {
    if (!partitioner) return make_error(ErrorCode::kInvalidArgument, "pass manager holds a null partitioner");
    const std::string backend = partitioner->backend().id();
    for (const auto& transform : partitioner->edge_transforms()) {
      if (!transform)
        return make_error(ErrorCode::kInvalidArgument, "backend '{}' contributed a null edge transform", backend);
      KESTREL_RETURN_IF_ERROR(run_step(
          graph, *transform, fmt::format("edge transform '{}' of backend '{}'", transform->name(), backend)));
      report.executed.push_back("transform:" + backend + ":" + transform->name());
    }
  }
  for (const auto& partitioner : partitioners_) {
    const std::string backend = partitioner->backend().id();
    auto partition = partitioner->partition(graph);
    if (!partition.ok()) return partition.error().with_context(fmt::format("partitioning for backend '{}'", backend));
    if (auto status = graph.validate(); !status.ok())
      return status.error().with_context(fmt::format("partitioning for backend '{}' left an invalid graph", backend));
    report.executed.push_back("partition:" + backend);
    report.partitions.push_back(std::move(partition).value());
  }
  return report;
}

}  // namespace kestrel::exporter
