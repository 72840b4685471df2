// The CPU stand-in for a QNN backend library: it implements QnnApi on the host, checks what a
// QNN backend checks (tensor types and ids, op types, parameter names and types, output shapes
// by each op's definition, topological order, memory handles and their contexts) and executes
// the QNN op graph, with the portable kernels where an op's semantics are theirs. It proves
// that the lowered graph computes what the Kestrel graph computes; it knows nothing of
// Kestrel ops. It does not model fp16 execution, VTCM or HTP performance.
//
// Differences that exercise the delegate: graph_outputs() enumerates the APP_READ tensors in
// reverse creation order, and execute() takes outputs only in that order.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "backends/qnn/qnn_api.h"

namespace kestrel::qnn {

struct StandinStats {
  uint64_t contexts_created = 0;
  uint64_t contexts_live = 0;
  uint64_t graphs_finalized = 0;
  uint64_t executes = 0;
  uint64_t raw_bindings = 0;        // APP tensors bound to a client buffer
  uint64_t memhandle_bindings = 0;  // APP tensors bound to a registered memory handle
  uint64_t registrations = 0;       // successful QnnMem_register calls
  uint64_t deregistrations = 0;
  uint64_t live_registrations = 0;
  // How each APP tensor (by name) was bound at its last execute.
  std::map<std::string, QnnMemType> last_binding;
};

class StandinApi final : public QnnApi {
 public:
  StandinApi();
  ~StandinApi() override;

  std::string describe() const override { return "stand-in"; }
  Result<QnnContextHandle> create_context(const QnnBackendConfig& config) override;
  Status free_context(QnnContextHandle context) override;
  Result<QnnGraphHandle> create_graph(QnnContextHandle context, const std::string& name,
                                      const QnnBackendConfig& config) override;
  Result<QnnTensorId> create_tensor(QnnGraphHandle graph, const QnnTensorSpec& spec) override;
  Status add_node(QnnGraphHandle graph, const QnnOpSpec& op) override;
  Status finalize(QnnGraphHandle graph) override;
  Result<std::vector<QnnTensorId>> graph_outputs(QnnGraphHandle graph) override;
  Status execute(QnnGraphHandle graph, std::span<const QnnTensorBinding> inputs,
                 std::span<const QnnTensorBinding> outputs) override;
  Result<QnnApiMemHandle> register_memory(QnnContextHandle context, const QnnMemDescriptor& memory) override;
  Status deregister_memory(QnnApiMemHandle handle) override;

  StandinStats stats() const;
  // The op types of every node added so far (all graphs), for reports and tests.
  std::map<std::string, uint64_t> op_counts() const;

  struct Context;
  struct Graph;
  struct Registration;

 private:
  Result<Context*> find_context(QnnContextHandle handle);
  Result<Graph*> find_graph(QnnGraphHandle handle);

  mutable std::mutex mutex_;
  std::map<const void*, std::unique_ptr<Context>> contexts_;
  std::map<const void*, std::unique_ptr<Registration>> registrations_;
  uint64_t next_context_ = 1;
  StandinStats stats_;
  std::map<std::string, uint64_t> op_counts_;
};

}  // namespace kestrel::qnn
