// The QNN backend at run time, above QnnApi: it lowers payloads and builds their graphs in
// QNN contexts shared by delegates with the same compile specs (prefill and decode of a
// program share one), knows which method I/O reaches which context, and registers shared
// (rpcmem) buffers with those contexts: it is the QnnMemRegistrar the rpcmem allocator uses.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "backends/qnn/lowering/lowering.h"
#include "backends/qnn/qnn_api.h"
#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/mem_registrar.h"
#include "kestrel/backends/qnn/payload.h"
#include "kestrel/runtime/backend.h"

namespace kestrel::qnn {

class QnnRuntime;

// One delegate: a finalized QNN graph and how the Kestrel method's views bind to it.
class QnnDelegate {
 public:
  ~QnnDelegate();
  QnnDelegate(const QnnDelegate&) = delete;
  QnnDelegate& operator=(const QnnDelegate&) = delete;

  // output_order()[k]: the exported output index of the k-th output the graph enumerates.
  const std::vector<int32_t>& output_order() const { return output_order_; }
  QnnContextId context() const { return context_; }
  const QnnGraphPlan& plan() const { return *plan_; }
  // `inputs` in payload order; `outputs` in output_order().
  Status execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs);

 private:
  friend class QnnRuntime;
  QnnDelegate() = default;

  std::shared_ptr<QnnRuntime> runtime_;
  QnnContextId context_ = 0;
  QnnGraphHandle graph_ = nullptr;
  std::shared_ptr<const QnnGraphPlan> plan_;
  QnnPayload payload_;  // its blob view is unused after init
  runtime::DelegateContext where_;
  bool shared_buffer_ = false;
  std::vector<QnnTensorId> api_ids_;  // plan tensor -> the id QnnApi gave it
  std::vector<int32_t> output_order_;
  std::vector<QnnTensorBinding> inputs_, outputs_;  // reused every execute
  std::vector<int32_t> bound_input_;  // per delegate input: index into inputs_, or -1 (static)
};

class QnnRuntime final : public QnnMemRegistrar, public std::enable_shared_from_this<QnnRuntime> {
 public:
  explicit QnnRuntime(std::shared_ptr<QnnApi> api) : api_(std::move(api)) {}
  ~QnnRuntime() override;

  QnnApi& api() { return *api_; }

  // Lowers the payload, builds and finalizes its graph in the context for its compile specs.
  Result<std::unique_ptr<QnnDelegate>> create_delegate(const QnnPayload& payload, const QnnCompileOptions& options,
                                                       const runtime::DelegateContext& where);

  // QnnMemRegistrar.
  Result<std::vector<QnnContextId>> contexts_for(const std::string& method, size_t io_index, bool is_input) override;
  Result<QnnMemHandle> register_memory(QnnContextId context, const QnnMemRegion& region) override;
  void deregister_memory(QnnContextId context, QnnMemHandle handle) override;

  // The handle `address` is registered under in `context`, or null.
  QnnApiMemHandle registered(QnnContextId context, const void* address) const;
  size_t live_contexts() const;

 private:
  friend class QnnDelegate;
  struct Context {
    QnnContextHandle handle = nullptr;
    std::string key;  // the compile specs it serves
    int delegates = 0;
    std::vector<std::shared_ptr<const QnnGraphPlan>> plans;  // static data of its graphs
  };
  struct Registration {
    QnnApiMemHandle handle = nullptr;
  };
  struct DelegateRecord {
    const QnnDelegate* delegate;
    std::string method;
    QnnContextId context;
    bool shared_buffer;
    std::vector<int32_t> method_inputs, method_outputs;
  };

  Result<QnnContextId> acquire_context(const std::string& key, const QnnBackendConfig& config);
  void release(const QnnDelegate& delegate);

  std::shared_ptr<QnnApi> api_;
  mutable std::mutex mutex_;
  std::map<QnnContextId, Context> contexts_;
  std::map<std::pair<QnnContextId, const void*>, Registration> registrations_;
  std::vector<DelegateRecord> delegates_;
  uint64_t graphs_made_ = 0;
};

// Context ids are unique in the process (never reused), so a registration of a freed context
// can never be taken for one of a new context.
QnnContextId next_qnn_context_id();

QnnBackendConfig qnn_backend_config(const QnnCompileOptions& options);

}  // namespace kestrel::qnn
