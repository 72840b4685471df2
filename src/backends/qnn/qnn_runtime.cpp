#include "backends/qnn/qnn_runtime.h"

#include <algorithm>
#include <atomic>
#include <set>

#include "kestrel/core/error_helpers.h"
#include "kestrel/core/log.h"

namespace kestrel::qnn {

QnnContextId next_qnn_context_id() {
  static std::atomic<QnnContextId> next{1};
  return next++;
}

QnnBackendConfig qnn_backend_config(const QnnCompileOptions& options) {
  QnnBackendConfig config;
  config.soc_model = options.soc_model;
  config.htp_arch = options.htp_arch;
  config.vtcm_mb = options.vtcm_mb;
  config.performance_mode = options.htp_performance_mode;
  config.fp16 = options.precision == "fp16";
  config.profile_level = static_cast<int>(options.profile_level);
  config.debug = options.debug;
  return config;
}

namespace {

std::string context_key(const QnnPayload& payload) {
  std::string key;
  for (const auto& [name, value] : payload.compile_specs) key += name + "=" + value + ";";
  return key;
}

// Bytes of the parameters and constants a payload references: the program constant wired to
// the value's delegate input, checked against the payload's dtype and shape.
ConstantBytes constant_bytes(const QnnPayload& payload, const runtime::DelegateContext& where) {
  return [&payload, &where](const QnnPayloadValue& value) -> Result<std::span<const uint8_t>> {
    if (value.embedded) return payload.data_of(value);
    const TensorView* view = value.input_index >= 0 ? where.constant(static_cast<size_t>(value.input_index)) : nullptr;
    if (view == nullptr)
      return make_error(ErrorCode::kInvalidArgument,
                        "qnn: '{}' references a program constant, but delegate input {} of method '{}' is not one",
                        value.name, value.input_index, where.method);
    const Shape shape(std::span<const int64_t>(value.shape));
    if (view->dtype != value.dtype || view->shape != shape)
      return make_error(ErrorCode::kInvalidArgument,
                        "qnn: '{}' is {} {} in the payload but the program constant wired to it is {} {}", value.name,
                        dtype_name(value.dtype), shape.to_string(), dtype_name(view->dtype), view->shape.to_string());
    KESTREL_ASSIGN_OR_RETURN(size_t bytes, view->storage_bytes());
    return std::span<const uint8_t>(static_cast<const uint8_t*>(view->data), bytes);
  };
}

std::string graph_name(const std::string& method, uint64_t n) {
  std::string name;
  for (char c : method) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return fmt::format("{}_{}", name.empty() ? "graph" : name, n);
}

}  // namespace

// ---- QnnRuntime ----------------------------------------------------------------------------

QnnRuntime::~QnnRuntime() {
  // Delegates hold the runtime, so none is left; free what registrations remain.
  for (auto& [key, registration] : registrations_) (void)api_->deregister_memory(registration.handle);
}

Result<QnnContextId> QnnRuntime::acquire_context(const std::string& key, const QnnBackendConfig& config) {
  for (auto& [id, context] : contexts_) {
    if (context.key == key) {
      ++context.delegates;
      return id;
    }
  }
  auto handle = api_->create_context(config);
  if (!handle.ok()) return handle.error().with_context(fmt::format("qnn: creating a context on {}", api_->describe()));
  const QnnContextId id = next_qnn_context_id();
  Context& context = contexts_[id];
  context.handle = *handle;
  context.key = key;
  context.delegates = 1;
  return id;
}

Result<std::unique_ptr<QnnDelegate>> QnnRuntime::create_delegate(const QnnPayload& payload,
                                                                 const QnnCompileOptions& options,
                                                                 const runtime::DelegateContext& where) {
  if (where.constants.size() != payload.inputs.size())
    return make_error(ErrorCode::kInvalidArgument, "qnn: the payload has {} inputs, the method passes {}",
                      payload.inputs.size(), where.constants.size());
  if (where.method_outputs.size() != payload.outputs.size())
    return make_error(ErrorCode::kInvalidArgument, "qnn: the payload has {} outputs, the method binds {}",
                      payload.outputs.size(), where.method_outputs.size());
  KESTREL_ASSIGN_OR_RETURN(QnnGraphPlan lowered, lower_to_qnn(payload, constant_bytes(payload, where)));
  // With shared_buffer, the method's own I/O must arrive in registered shared memory.
  if (options.shared_buffer) {
    for (size_t i = 0; i < payload.inputs.size(); ++i)
      if (lowered.input_tensors[i] >= 0 && where.method_inputs[i] >= 0)
        lowered.tensors[lowered.input_tensors[i]].mem_type = QnnMemType::kMemHandle;
    for (size_t k = 0; k < payload.outputs.size(); ++k)
      if (where.method_outputs[k] >= 0) lowered.tensors[lowered.output_tensors[k]].mem_type = QnnMemType::kMemHandle;
  }
  auto plan = std::make_shared<const QnnGraphPlan>(std::move(lowered));

  std::unique_ptr<QnnDelegate> delegate(new QnnDelegate());
  delegate->runtime_ = shared_from_this();
  delegate->plan_ = plan;
  delegate->payload_ = payload;
  delegate->where_ = where;
  delegate->shared_buffer_ = options.shared_buffer;

  std::lock_guard lock(mutex_);
  const QnnBackendConfig config = qnn_backend_config(options);
  KESTREL_ASSIGN_OR_RETURN(delegate->context_, acquire_context(context_key(payload), config));
  Context& context = contexts_.at(delegate->context_);
  context.plans.push_back(plan);
  delegates_.push_back(DelegateRecord{delegate.get(), where.method, delegate->context_, options.shared_buffer,
                                      where.method_inputs, where.method_outputs});
  // From here on, the delegate's destructor releases the context and the record.

  const std::string name = graph_name(where.method, ++graphs_made_);
  auto failed = [&](const Error& error) { return error.with_context(fmt::format("qnn: building graph '{}' on {}", name, api_->describe())); };
  auto graph = api_->create_graph(context.handle, name, config);
  if (!graph.ok()) return failed(graph.error());
  delegate->graph_ = *graph;
  for (QnnTensorSpec spec : plan->tensors) {
    spec.name = name + "_" + spec.name;  // QNN wants tensor names unique in the context
    auto id = api_->create_tensor(delegate->graph_, spec);
    if (!id.ok()) return failed(id.error());
    delegate->api_ids_.push_back(*id);
  }
  for (QnnOpSpec op : plan->ops) {
    for (QnnTensorId& id : op.inputs) id = delegate->api_ids_.at(id);
    for (QnnTensorId& id : op.outputs) id = delegate->api_ids_.at(id);
    for (QnnParam& param : op.params)
      if (auto* id = std::get_if<QnnTensorId>(&param.value)) *id = delegate->api_ids_.at(*id);
    if (Status added = api_->add_node(delegate->graph_, op); !added.ok()) return failed(added.error());
  }
  if (Status finalized = api_->finalize(delegate->graph_); !finalized.ok()) return failed(finalized.error());

  // Outputs in the order the graph enumerates them, each mapped to its exported index.
  auto enumerated = api_->graph_outputs(delegate->graph_);
  if (!enumerated.ok()) return failed(enumerated.error());
  if (enumerated->size() != plan->output_tensors.size())
    return make_error(ErrorCode::kInternal, "qnn: graph '{}' enumerates {} outputs, the payload exports {}", name,
                      enumerated->size(), plan->output_tensors.size());
  for (QnnTensorId api_id : *enumerated) {
    auto local = std::find(delegate->api_ids_.begin(), delegate->api_ids_.end(), api_id);
    auto exported = local == delegate->api_ids_.end()
                        ? plan->output_tensors.end()
                        : std::find(plan->output_tensors.begin(), plan->output_tensors.end(),
                                    static_cast<int32_t>(local - delegate->api_ids_.begin()));
    if (exported == plan->output_tensors.end())
      return make_error(ErrorCode::kInternal, "qnn: graph '{}' enumerates tensor {}, which is not an exported output",
                        name, api_id);
    delegate->output_order_.push_back(static_cast<int32_t>(exported - plan->output_tensors.begin()));
    QnnTensorBinding binding;
    binding.tensor = api_id;
    binding.mem_type = plan->tensors[plan->output_tensors[delegate->output_order_.back()]].mem_type;
    delegate->outputs_.push_back(binding);
  }
  for (size_t i = 0; i < plan->input_tensors.size(); ++i) {
    const int32_t local = plan->input_tensors[i];
    if (local < 0) {
      delegate->bound_input_.push_back(-1);
      continue;
    }
    QnnTensorBinding binding;
    binding.tensor = delegate->api_ids_[local];
    binding.mem_type = plan->tensors[local].mem_type;
    delegate->bound_input_.push_back(static_cast<int32_t>(delegate->inputs_.size()));
    delegate->inputs_.push_back(binding);
  }
  return delegate;
}

void QnnRuntime::release(const QnnDelegate& delegate) {
  std::lock_guard lock(mutex_);
  delegates_.erase(std::remove_if(delegates_.begin(), delegates_.end(),
                                  [&](const DelegateRecord& r) { return r.delegate == &delegate; }),
                   delegates_.end());
  auto it = contexts_.find(delegate.context_);
  if (it == contexts_.end() || --it->second.delegates > 0) return;
  // The last graph of the context is gone: deregister what is still registered with it (QNN
  // frees a context only without registrations), then free it.
  for (auto r = registrations_.begin(); r != registrations_.end();) {
    if (r->first.first == it->first) {
      if (Status status = api_->deregister_memory(r->second.handle); !status.ok())
        log(LogLevel::kWarn, "qnn: {}", status.error().to_string());
      r = registrations_.erase(r);
    } else {
      ++r;
    }
  }
  if (Status status = api_->free_context(it->second.handle); !status.ok())
    log(LogLevel::kWarn, "qnn: freeing context {}: {}", it->first, status.error().to_string());
  contexts_.erase(it);
}

Result<std::vector<QnnContextId>> QnnRuntime::contexts_for(const std::string& method, size_t io_index, bool is_input) {
  std::lock_guard lock(mutex_);
  std::set<QnnContextId> contexts;
  const auto index = static_cast<int32_t>(io_index);
  for (const DelegateRecord& r : delegates_) {
    if (!r.shared_buffer || r.method != method) continue;
    const auto& list = is_input ? r.method_inputs : r.method_outputs;
    if (std::find(list.begin(), list.end(), index) != list.end()) contexts.insert(r.context);
  }
  return std::vector<QnnContextId>(contexts.begin(), contexts.end());
}

Result<QnnMemHandle> QnnRuntime::register_memory(QnnContextId context_id, const QnnMemRegion& region) {
  std::lock_guard lock(mutex_);
  auto it = contexts_.find(context_id);
  if (it == contexts_.end())
    return make_error(ErrorCode::kInvalidArgument, "qnn: context {} does not exist (anymore)", context_id);
  const auto key = std::make_pair(context_id, static_cast<const void*>(region.address));
  if (registrations_.count(key))
    return make_error(ErrorCode::kInvalidArgument, "qnn: {} is already registered with context {}", region.address,
                      context_id);
  QnnMemDescriptor memory;
  memory.fd = region.fd;
  memory.offset = region.offset;
  memory.total = region.total;
  memory.address = region.address;
  memory.bytes = region.bytes;
  KESTREL_ASSIGN_OR_RETURN(memory.data_type, qnn_data_type(region.info.dtype));
  for (int64_t d : region.info.shape.dims()) memory.dims.push_back(static_cast<uint32_t>(d));
  auto handle = api_->register_memory(it->second.handle, memory);
  if (!handle.ok()) return handle.error();
  registrations_[key] = Registration{*handle};
  return reinterpret_cast<QnnMemHandle>(*handle);
}

void QnnRuntime::deregister_memory(QnnContextId context_id, QnnMemHandle handle) {
  std::lock_guard lock(mutex_);
  for (auto it = registrations_.begin(); it != registrations_.end(); ++it) {
    if (it->first.first != context_id || reinterpret_cast<QnnMemHandle>(it->second.handle) != handle) continue;
    if (Status status = api_->deregister_memory(it->second.handle); !status.ok())
      log(LogLevel::kWarn, "qnn: {}", status.error().to_string());
    registrations_.erase(it);
    return;
  }
  // Already deregistered when its context was freed.
}

QnnApiMemHandle QnnRuntime::registered(QnnContextId context, const void* address) const {
  std::lock_guard lock(mutex_);
  auto it = registrations_.find(std::make_pair(context, address));
  return it == registrations_.end() ? nullptr : it->second.handle;
}

size_t QnnRuntime::live_contexts() const {
  std::lock_guard lock(mutex_);
  return contexts_.size();
}

// ---- QnnDelegate ---------------------------------------------------------------------------

QnnDelegate::~QnnDelegate() {
  if (runtime_) runtime_->release(*this);
}

Status QnnDelegate::execute(std::span<const TensorView> inputs, std::span<const TensorView> outputs) {
  if (inputs.size() != bound_input_.size() || outputs.size() != outputs_.size())
    return make_error(ErrorCode::kInvalidArgument, "qnn: delegate of '{}' takes {} inputs and {} outputs, got {} and {}",
                      where_.method, bound_input_.size(), outputs_.size(), inputs.size(), outputs.size());
  auto bind = [&](QnnTensorBinding& binding, const TensorView& view, const QnnPayloadValue& value, bool is_input,
                  int32_t method_io) -> Status {
    const Shape shape(std::span<const int64_t>(value.shape));
    if (view.dtype != value.dtype || view.shape != shape || view.data == nullptr)
      return make_error(ErrorCode::kInvalidArgument, "qnn: '{}' expects {} {}, got {} {}", value.name,
                        dtype_name(value.dtype), shape.to_string(), dtype_name(view.dtype), view.shape.to_string());
    if (binding.mem_type == QnnMemType::kRaw) {
      binding.data = view.data;
      KESTREL_ASSIGN_OR_RETURN(binding.bytes, view.storage_bytes());
      return ok_status();
    }
    binding.mem_handle = runtime_->registered(context_, view.data);
    if (binding.mem_handle == nullptr)
      return make_error(ErrorCode::kInvalidArgument,
                        "qnn: the delegate was exported with shared_buffer=true, but {} {} ('{}') of method '{}' is "
                        "not a registered shared buffer; run with --allocator rpcmem (libcdsprpc.so present) or "
                        "export with shared_buffer=false",
                        is_input ? "input" : "output", method_io, value.name, where_.method);
    return ok_status();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (bound_input_[i] < 0) continue;  // a static tensor built from the program's constant
    KESTREL_RETURN_IF_ERROR(bind(inputs_[bound_input_[i]], inputs[i], *payload_.find_value(payload_.inputs[i]), true,
                                 where_.method_inputs[i]));
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const int32_t exported = output_order_[k];
    KESTREL_RETURN_IF_ERROR(bind(outputs_[k], outputs[k], *payload_.find_value(payload_.outputs[exported]), false,
                                 where_.method_outputs[exported]));
  }
  return runtime_->api().execute(graph_, inputs_, outputs_);
}

}  // namespace kestrel::qnn
