#include "backends/qnn/standin/standin_api.h"

#include <algorithm>
#include <cstring>

#include "backends/qnn/standin/standin_ops.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

using standin::OpArgs;
using standin::Tensor;

struct StandinApi::Graph {
  Context* context = nullptr;
  std::string name;
  std::vector<Tensor> tensors;  // id = index
  std::vector<QnnOpSpec> ops;
  std::vector<const standin::OpDef*> defs;
  std::vector<QnnTensorId> app_write, app_read;  // creation order
  bool finalized = false;
};

struct StandinApi::Context {
  uint64_t id = 0;
  std::vector<std::unique_ptr<Graph>> graphs;
};

struct StandinApi::Registration {
  Context* context = nullptr;
  QnnMemDescriptor memory;
};

namespace {

Error standin_error(ErrorCode code, const std::string& message) { return Error(code, "qnn stand-in: " + message); }

}  // namespace

StandinApi::StandinApi() = default;
StandinApi::~StandinApi() = default;

Result<StandinApi::Context*> StandinApi::find_context(QnnContextHandle handle) {
  auto it = contexts_.find(handle);
  if (it == contexts_.end()) return standin_error(ErrorCode::kInvalidArgument, "unknown or freed context handle");
  return it->second.get();
}

Result<StandinApi::Graph*> StandinApi::find_graph(QnnGraphHandle handle) {
  for (auto& [key, context] : contexts_)
    for (auto& graph : context->graphs)
      if (graph.get() == handle) return graph.get();
  return standin_error(ErrorCode::kInvalidArgument, "unknown graph handle (or its context was freed)");
}

Result<QnnContextHandle> StandinApi::create_context(const QnnBackendConfig&) {
  std::lock_guard lock(mutex_);
  auto context = std::make_unique<Context>();
  context->id = next_context_++;
  QnnContextHandle handle = context.get();
  contexts_.emplace(handle, std::move(context));
  ++stats_.contexts_created;
  ++stats_.contexts_live;
  return handle;
}

Status StandinApi::free_context(QnnContextHandle handle) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Context * context, find_context(handle));
  // QNN wants memory deregistered before its context goes: refuse, so the delegate's order is
  // checked here rather than on a device.
  for (const auto& [key, registration] : registrations_)
    if (registration->context == context)
      return standin_error(ErrorCode::kInvalidArgument,
                           fmt::format("context {} is freed with memory still registered (address {})", context->id,
                                       registration->memory.address));
  contexts_.erase(handle);
  --stats_.contexts_live;
  return ok_status();
}

Result<QnnGraphHandle> StandinApi::create_graph(QnnContextHandle context_handle, const std::string& name,
                                                const QnnBackendConfig&) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Context * context, find_context(context_handle));
  for (const auto& graph : context->graphs)
    if (graph->name == name)
      return standin_error(ErrorCode::kInvalidArgument, fmt::format("graph '{}' already exists in this context", name));
  auto graph = std::make_unique<Graph>();
  graph->context = context;
  graph->name = name;
  context->graphs.push_back(std::move(graph));
  return context->graphs.back().get();
}

Result<QnnTensorId> StandinApi::create_tensor(QnnGraphHandle handle, const QnnTensorSpec& spec) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Graph * graph, find_graph(handle));
  auto fail = [&](const std::string& why) {
    return standin_error(ErrorCode::kInvalidArgument, fmt::format("graph '{}', tensor '{}': {}", graph->name, spec.name, why));
  };
  if (graph->finalized) return fail("the graph is finalized");
  if (spec.name.empty()) return fail("a tensor needs a name");
  // As in QNN, tensor names are unique in the whole context, not only in the graph.
  for (const auto& other : graph->context->graphs)
    for (const Tensor& t : other->tensors)
      if (t.spec.name == spec.name)
        return fail(fmt::format("the name is taken in this context (by graph '{}')", other->name));
  if (spec.dims.empty()) return fail("rank 0");
  for (uint32_t d : spec.dims)
    if (d == 0) return fail("a dim is 0");
  if (spec.type == QnnTensorType::kStatic) {
    if (spec.data.size() != spec.bytes())
      return fail(fmt::format("static data has {} bytes, {} [{}] needs {}", spec.data.size(),
                              qnn_data_type_name(spec.data_type), fmt::join(spec.dims, ", "), spec.bytes()));
  } else if (!spec.data.empty()) {
    return fail("only static tensors carry data at creation");
  }
  const auto id = static_cast<QnnTensorId>(graph->tensors.size());
  Tensor tensor;
  tensor.spec = spec;
  if (spec.type == QnnTensorType::kStatic) tensor.data = const_cast<uint8_t*>(spec.data.data());
  graph->tensors.push_back(std::move(tensor));
  if (spec.type == QnnTensorType::kAppWrite) graph->app_write.push_back(id);
  if (spec.type == QnnTensorType::kAppRead) graph->app_read.push_back(id);
  return id;
}

Status StandinApi::add_node(QnnGraphHandle handle, const QnnOpSpec& op) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Graph * graph, find_graph(handle));
  auto fail = [&](const std::string& why) {
    return standin_error(ErrorCode::kInvalidArgument,
                         fmt::format("graph '{}', node '{}' ({}): {}", graph->name, op.name, op.type, why));
  };
  if (graph->finalized) return fail("the graph is finalized");
  if (op.package != "qti.aisw") return fail(fmt::format("unknown op package '{}'", op.package));
  const standin::OpDef* def = standin::find_op(op.type);
  if (def == nullptr) return fail("the stand-in does not know this op type");
  for (const QnnOpSpec& other : graph->ops)
    if (other.name == op.name) return fail("the node name is taken");
  if (op.inputs.size() < def->min_inputs || op.inputs.size() > def->max_inputs)
    return fail(fmt::format("{} inputs, expected {}..{}", op.inputs.size(), def->min_inputs, def->max_inputs));
  if (op.outputs.size() != 1) return fail(fmt::format("{} outputs, expected 1", op.outputs.size()));
  for (QnnTensorId id : op.inputs) {
    if (id >= graph->tensors.size()) return fail(fmt::format("input tensor id {} does not exist", id));
    const Tensor& t = graph->tensors[id];
    const bool ready = t.spec.type == QnnTensorType::kStatic || t.spec.type == QnnTensorType::kAppWrite || t.produced;
    if (!ready) return fail(fmt::format("input '{}' is not produced by an earlier node", t.spec.name));
  }
  for (QnnTensorId id : op.outputs) {
    if (id >= graph->tensors.size()) return fail(fmt::format("output tensor id {} does not exist", id));
    const Tensor& t = graph->tensors[id];
    if (t.spec.type != QnnTensorType::kNative && t.spec.type != QnnTensorType::kAppRead)
      return fail(fmt::format("output '{}' is {} (outputs are NATIVE or APP_READ)", t.spec.name,
                              qnn_tensor_type_name(t.spec.type)));
    if (t.produced) return fail(fmt::format("output '{}' is already written by another node", t.spec.name));
  }
  for (const QnnParam& param : op.params) {
    if (const auto* id = std::get_if<QnnTensorId>(&param.value); id && *id >= graph->tensors.size())
      return fail(fmt::format("parameter '{}' names tensor {}, which does not exist", param.name, *id));
  }
  OpArgs args(op, graph->tensors);
  KESTREL_RETURN_IF_ERROR(def->check(args));
  for (QnnTensorId id : op.inputs) graph->tensors[id].consumed = true;
  for (QnnTensorId id : op.outputs) graph->tensors[id].produced = true;
  graph->ops.push_back(op);
  graph->defs.push_back(def);
  ++op_counts_[op.type];
  return ok_status();
}

Status StandinApi::finalize(QnnGraphHandle handle) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Graph * graph, find_graph(handle));
  if (graph->finalized) return standin_error(ErrorCode::kInvalidArgument, fmt::format("graph '{}' is already finalized", graph->name));
  for (Tensor& t : graph->tensors) {
    if (t.spec.type == QnnTensorType::kAppRead && !t.produced)
      return standin_error(ErrorCode::kInvalidArgument,
                           fmt::format("graph '{}': output '{}' is never written", graph->name, t.spec.name));
    if (t.spec.type == QnnTensorType::kNative) {
      if (!t.produced && t.consumed)
        return standin_error(ErrorCode::kInvalidArgument,
                             fmt::format("graph '{}': '{}' is read but never written", graph->name, t.spec.name));
      t.storage.assign(t.spec.bytes(), 0);
      t.data = t.storage.data();
    }
  }
  graph->finalized = true;
  ++stats_.graphs_finalized;
  return ok_status();
}

Result<std::vector<QnnTensorId>> StandinApi::graph_outputs(QnnGraphHandle handle) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Graph * graph, find_graph(handle));
  // Reverse creation order: a client binding outputs by position instead of by the id this
  // returns gets the wrong tensors.
  return std::vector<QnnTensorId>(graph->app_read.rbegin(), graph->app_read.rend());
}

Status StandinApi::execute(QnnGraphHandle handle, std::span<const QnnTensorBinding> inputs,
                           std::span<const QnnTensorBinding> outputs) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Graph * graph, find_graph(handle));
  auto fail = [&](const std::string& why) {
    return standin_error(ErrorCode::kInvalidArgument, fmt::format("executing graph '{}': {}", graph->name, why));
  };
  if (!graph->finalized) return fail("the graph is not finalized");
  if (inputs.size() != graph->app_write.size())
    return fail(fmt::format("{} inputs given, the graph has {}", inputs.size(), graph->app_write.size()));
  if (outputs.size() != graph->app_read.size())
    return fail(fmt::format("{} outputs given, the graph has {}", outputs.size(), graph->app_read.size()));

  auto bind = [&](const QnnTensorBinding& binding, QnnTensorType expected) -> Status {
    if (binding.tensor >= graph->tensors.size()) return fail(fmt::format("tensor id {} does not exist", binding.tensor));
    Tensor& t = graph->tensors[binding.tensor];
    if (t.spec.type != expected)
      return fail(fmt::format("'{}' is {}, not {}", t.spec.name, qnn_tensor_type_name(t.spec.type),
                              qnn_tensor_type_name(expected)));
    if (binding.mem_type != t.spec.mem_type)
      return fail(fmt::format("'{}' was created for {} but got {}", t.spec.name,
                              t.spec.mem_type == QnnMemType::kRaw ? "client buffers" : "registered memory handles",
                              binding.mem_type == QnnMemType::kRaw ? "a client buffer" : "a memory handle"));
    if (binding.mem_type == QnnMemType::kRaw) {
      if (binding.data == nullptr || binding.bytes != t.spec.bytes())
        return fail(fmt::format("'{}' got a client buffer of {} bytes at {}; it needs {}", t.spec.name, binding.bytes,
                                binding.data, t.spec.bytes()));
      t.data = static_cast<uint8_t*>(binding.data);
      ++stats_.raw_bindings;
    } else {
      auto it = registrations_.find(binding.mem_handle);
      if (it == registrations_.end())
        return fail(fmt::format("'{}' got memory handle {}, which is not registered (or was deregistered)",
                                t.spec.name, binding.mem_handle));
      const Registration& r = *it->second;
      if (r.context != graph->context)
        return fail(fmt::format("'{}' got memory handle {} registered with another context", t.spec.name,
                                binding.mem_handle));
      if (r.memory.data_type != t.spec.data_type || r.memory.dims != t.spec.dims)
        return fail(fmt::format("'{}' is {} [{}] but its memory was registered as {} [{}]", t.spec.name,
                                qnn_data_type_name(t.spec.data_type), fmt::join(t.spec.dims, ", "),
                                qnn_data_type_name(r.memory.data_type), fmt::join(r.memory.dims, ", ")));
      t.data = static_cast<uint8_t*>(r.memory.address);
      ++stats_.memhandle_bindings;
    }
    stats_.last_binding[t.spec.name] = binding.mem_type;
    return ok_status();
  };
  std::vector<bool> seen(graph->tensors.size(), false);
  for (const QnnTensorBinding& binding : inputs) {
    KESTREL_RETURN_IF_ERROR(bind(binding, QnnTensorType::kAppWrite));
    if (seen[binding.tensor]) return fail(fmt::format("input tensor {} is bound twice", binding.tensor));
    seen[binding.tensor] = true;
  }
  for (size_t k = 0; k < outputs.size(); ++k) {
    const QnnTensorId expected = graph->app_read[graph->app_read.size() - 1 - k];
    if (outputs[k].tensor != expected)
      return fail(fmt::format("output {} is tensor {}, but this graph enumerates '{}' (tensor {}) there", k,
                              outputs[k].tensor, graph->tensors[expected].spec.name, expected));
    KESTREL_RETURN_IF_ERROR(bind(outputs[k], QnnTensorType::kAppRead));
  }
  for (size_t i = 0; i < graph->ops.size(); ++i) {
    OpArgs args(graph->ops[i], graph->tensors);
    KESTREL_RETURN_IF_ERROR(graph->defs[i]->run(args));
  }
  ++stats_.executes;
  return ok_status();
}

Result<QnnApiMemHandle> StandinApi::register_memory(QnnContextHandle handle, const QnnMemDescriptor& memory) {
  std::lock_guard lock(mutex_);
  KESTREL_ASSIGN_OR_RETURN(Context * context, find_context(handle));
  auto fail = [&](const std::string& why) {
    return standin_error(ErrorCode::kInvalidArgument, fmt::format("QnnMem_register: {}", why));
  };
  if (memory.fd < 0) return fail("no file descriptor");
  if (memory.address == nullptr || memory.bytes == 0) return fail("no memory");
  if (memory.offset > memory.total || memory.bytes > memory.total - memory.offset)
    return fail(fmt::format("{} bytes at offset {} overrun the {}-byte buffer", memory.bytes, memory.offset, memory.total));
  const uint64_t needed = qnn_tensor_bytes(memory.data_type, memory.dims);
  if (needed > memory.bytes)
    return fail(fmt::format("{} [{}] needs {} bytes, the region has {}", qnn_data_type_name(memory.data_type),
                            fmt::join(memory.dims, ", "), needed, memory.bytes));
  for (const auto& [key, r] : registrations_)
    if (r->context == context && r->memory.address == memory.address)
      return fail(fmt::format("address {} is already registered with context {} (QNN_MEM_ERROR_ALREADY_REGISTERED)",
                              memory.address, context->id));
  auto registration = std::make_unique<Registration>();
  registration->context = context;
  registration->memory = memory;
  QnnApiMemHandle key = registration.get();
  registrations_.emplace(key, std::move(registration));
  ++stats_.registrations;
  ++stats_.live_registrations;
  return key;
}

Status StandinApi::deregister_memory(QnnApiMemHandle handle) {
  std::lock_guard lock(mutex_);
  if (registrations_.erase(handle) == 0)
    return standin_error(ErrorCode::kInvalidArgument, "QnnMem_deRegister: handle is not registered");
  ++stats_.deregistrations;
  --stats_.live_registrations;
  return ok_status();
}

StandinStats StandinApi::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

std::map<std::string, uint64_t> StandinApi::op_counts() const {
  std::lock_guard lock(mutex_);
  return op_counts_;
}

}  // namespace kestrel::qnn
