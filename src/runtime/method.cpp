#include "kestrel/runtime/method.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <span>

#include "kestrel/core/error_helpers.h"

namespace kestrel::runtime {

using program::ValueKind;

// One resolved instruction, with the views of its values. They are filled when the method
// loads, and binding memory updates the data pointers of those it changes (bindable_views_):
// a decode step runs a few hundred instructions right after streaming the weights through the
// caches, and gathering every view from values_ on each execute missed the cache on each
// (1.7% of a one-thread q8 decode step of the 110M shape, by a profile).
struct Method::Step {
  std::string_view backend_id;  // delegates only (kernels name their op)
  std::optional<BoundKernel> kernel;
  BackendInterface* backend = nullptr;
  void* delegate_handle = nullptr;
  std::vector<int32_t> inputs;
  std::vector<int32_t> outputs;  // for delegates: in the order the backend reports them
  std::span<TensorView> input_views;  // in Method::views_
  std::span<TensorView> output_views;
};

namespace {

TensorInfo info_of(const program::ValueSpec& value) {
  TensorInfo info;
  info.name = value.name;
  info.dtype = value.dtype;
  info.shape = Shape(std::span<const int64_t>(value.shape));
  auto bytes = dtype_storage_bytes(value.dtype, info.shape.numel(),
                                   info.shape.rank() == 0 ? 1 : info.shape.dim(-1));
  info.nbytes = bytes.ok() ? *bytes : 0;
  return info;
}

Status check_output_order(const std::string& method, const std::string& backend,
                          const std::vector<int32_t>& order, size_t expected) {
  std::vector<bool> seen(expected, false);
  if (order.size() != expected)
    return make_error(ErrorCode::kInvalidArgument,
                      "method '{}': backend '{}' reported {} outputs, the program exports {}", method,
                      backend, order.size(), expected);
  for (int32_t index : order) {
    if (index < 0 || static_cast<size_t>(index) >= expected || seen[index])
      return make_error(ErrorCode::kInvalidArgument,
                        "method '{}': backend '{}' reported output index {} which is out of range "
                        "or repeated",
                        method, backend, index);
    seen[index] = true;
  }
  return ok_status();
}

// Where a delegate's inputs and outputs live in its method: constants (views into the mapped
// segment) and the method I/O they are.
DelegateContext delegate_context(const std::vector<TensorView>& values, const program::MethodSpec& spec,
                                 const program::DelegateCall& call) {
  DelegateContext context;
  context.method = spec.name;
  auto io_index = [](const std::vector<int32_t>& list, int32_t value) {
    auto it = std::find(list.begin(), list.end(), value);
    return it == list.end() ? -1 : static_cast<int32_t>(it - list.begin());
  };
  for (int32_t index : call.inputs) {
    TensorView view = values[index];
    if (spec.values[index].kind != ValueKind::kConstant) view.data = nullptr;
    context.constants.push_back(view);
    context.method_inputs.push_back(io_index(spec.inputs, index));
  }
  for (int32_t index : call.outputs) context.method_outputs.push_back(io_index(spec.outputs, index));
  return context;
}

}  // namespace

Method::~Method() {
  for (auto& [backend, handle] : delegates_) backend->destroy(handle);
}

Status Method::bind_io(int32_t value_index, const TensorView& view, const TensorInfo& info) {
  if (view.data == nullptr)
    return make_error(ErrorCode::kInvalidArgument, "method '{}': null buffer for '{}'", name(), info.name);
  if (view.dtype != info.dtype || view.shape != info.shape)
    return make_error(ErrorCode::kInvalidArgument,
                      "method '{}': '{}' expects {} {} but was given {} {}", name(), info.name,
                      dtype_name(info.dtype), info.shape.to_string(), dtype_name(view.dtype),
                      view.shape.to_string());
  if (!view.is_contiguous())
    return make_error(ErrorCode::kInvalidArgument, "method '{}': '{}' must be contiguous", name(), info.name);
  const bool changed = !bound_[value_index] || values_[value_index].data != view.data;
  values_[value_index].data = view.data;
  bound_[value_index] = true;
  if (changed) {
    refresh_aliases();
    refresh_step_views();
  }
  return ok_status();
}

void Method::refresh_step_views() {
  for (const auto& [view, value] : bindable_views_) view->data = values_[value].data;
}

Status Method::set_input(size_t index, const TensorView& view) {
  if (index >= num_inputs())
    return make_error(ErrorCode::kOutOfRange, "method '{}' has {} inputs, not {}", name(), num_inputs(), index + 1);
  return bind_io(spec_->inputs[index], view, input_infos_[index]);
}

Status Method::set_output(size_t index, const TensorView& view) {
  if (index >= num_outputs())
    return make_error(ErrorCode::kOutOfRange, "method '{}' has {} outputs, not {}", name(), num_outputs(), index + 1);
  return bind_io(spec_->outputs[index], view, output_infos_[index]);
}

void Method::refresh_aliases() {
  // Follow alias chains to their storage; the loader rejected self-aliases, and the depth bound
  // guards against cycles.
  for (size_t i = 0; i < spec_->values.size(); ++i) {
    if (spec_->values[i].kind != ValueKind::kAlias) continue;
    int32_t target = spec_->values[i].alias_of;
    for (size_t depth = 0; depth < spec_->values.size() && spec_->values[target].kind == ValueKind::kAlias; ++depth)
      target = spec_->values[target].alias_of;
    values_[i].data = spec_->values[target].kind == ValueKind::kAlias ? nullptr : values_[target].data;
  }
}

Status Method::execute() {
  for (size_t i = 0; i < spec_->inputs.size(); ++i)
    if (!bound_[spec_->inputs[i]])
      return make_error(ErrorCode::kInvalidArgument, "method '{}': input {} ('{}') is not bound", name(), i,
                        input_infos_[i].name);
  for (size_t i = 0; i < spec_->outputs.size(); ++i)
    if (!bound_[spec_->outputs[i]])
      return make_error(ErrorCode::kInvalidArgument, "method '{}': output {} ('{}') is not bound", name(), i,
                        output_infos_[i].name);
  for (size_t s = 0; s < steps_.size(); ++s) {
    Step& step = steps_[s];
    Status status;
    const auto start = profiling_ ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (step.kernel) {
      status = step.kernel->run(step.input_views, step.output_views, scratch_.span());
    } else {
      status = step.backend->execute(step.delegate_handle, step.input_views, step.output_views);
    }
    if (profiling_) {
      profile_[s].seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      ++profile_[s].calls;
    }
    if (!status.ok())
      return status.error().with_context(fmt::format("method '{}', instruction {} ({})", name(), s,
                                                        step.kernel ? std::string_view(step.kernel->op()) : step.backend_id));
  }
  return ok_status();
}

void Method::enable_profiling() {
  if (profiling_) return;
  profiling_ = true;
  profile_.resize(steps_.size());
  for (size_t s = 0; s < steps_.size(); ++s)
    profile_[s].op = steps_[s].kernel ? std::string(steps_[s].kernel->op())
                                      : fmt::format("delegate:{}", steps_[s].backend_id);
}

void Method::clear_profile() {
  for (InstructionTime& row : profile_) row.seconds = 0, row.calls = 0;
}

Result<std::shared_ptr<Program>> Program::load(const std::string& path, std::shared_ptr<const KernelRegistry> kernels,
                                               std::shared_ptr<const BackendRegistry> backends,
                                               const program::LoadOptions& load_options) {
  KESTREL_ASSIGN_OR_RETURN(auto loaded, program::LoadedProgram::load_file(path, load_options));
  return from_loaded(std::move(loaded), std::move(kernels), std::move(backends));
}

Result<std::shared_ptr<Program>> Program::from_loaded(std::shared_ptr<const program::LoadedProgram> loaded,
                                                      std::shared_ptr<const KernelRegistry> kernels,
                                                      std::shared_ptr<const BackendRegistry> backends) {
  if (!kernels) kernels = std::make_shared<KernelRegistry>();
  if (!backends) backends = std::make_shared<BackendRegistry>();
  auto program = std::make_shared<Program>();
  program->loaded_ = std::move(loaded);
  program->kernels_ = std::move(kernels);
  program->backends_ = std::move(backends);
  return program;
}

std::vector<std::string> Program::method_names() const {
  std::vector<std::string> names;
  for (const auto& method : loaded_->spec().methods) names.push_back(method.name);
  return names;
}

Result<std::unique_ptr<Method>> Program::load_method(const std::string& name) const {
  const program::MethodSpec* spec = loaded_->find_method(name);
  if (spec == nullptr)
    return make_error(ErrorCode::kNotFound, "program has no method '{}' (methods: {})", name,
                      fmt::join(method_names(), ", "));
  std::unique_ptr<Method> method(new Method());
  method->program_ = loaded_;
  method->spec_ = spec;
  auto arena = AlignedBuffer::allocate(spec->arena_bytes);
  if (!arena.ok()) return arena.error().with_context(fmt::format("method '{}': arena", name));
  method->arena_ = std::move(arena).value();
  method->values_.resize(spec->values.size());
  method->bound_.assign(spec->values.size(), false);
  for (size_t i = 0; i < spec->values.size(); ++i) {
    const auto& value = spec->values[i];
    TensorView& view = method->values_[i];
    view = TensorView::contiguous(value.dtype, Shape(std::span<const int64_t>(value.shape)), nullptr);
    if (value.kind == ValueKind::kConstant)
      view.data = const_cast<uint8_t*>(loaded_->constant_bytes(value).data());
    else if (value.kind == ValueKind::kIntermediate)
      view.data = method->arena_.data() + value.arena_offset;
  }
  method->refresh_aliases();
  for (int32_t index : spec->inputs) method->input_infos_.push_back(info_of(spec->values[index]));
  for (int32_t index : spec->outputs) method->output_infos_.push_back(info_of(spec->values[index]));

  const auto& delegates = loaded_->spec().delegates;
  size_t scratch_bytes = 0;
  for (size_t s = 0; s < spec->instructions.size(); ++s) {
    Method::Step step;
    if (const auto* call = std::get_if<program::KernelCall>(&spec->instructions[s])) {
      // Kernels see constants' bytes when they are prepared; everything else is bound or
      // computed at run time.
      std::vector<TensorView> inputs, outputs;
      for (int32_t index : call->inputs) {
        inputs.push_back(method->values_[index]);
        if (spec->values[index].kind != ValueKind::kConstant) inputs.back().data = nullptr;
      }
      for (int32_t index : call->outputs) {
        outputs.push_back(method->values_[index]);
        outputs.back().data = nullptr;
      }
      auto kernel = BoundKernel::prepare(*kernels_, call->op, call->attrs, inputs, outputs, prepared_constants_.get(),
                                         loaded_.get());
      if (!kernel.ok())
        return kernel.error().with_context(fmt::format("method '{}', instruction {}", name, s));
      scratch_bytes = std::max(scratch_bytes, kernel->scratch_bytes());
      step.kernel = std::move(kernel).value();
      step.inputs = call->inputs;
      step.outputs = call->outputs;
    } else {
      const auto& delegate_call = std::get<program::DelegateCall>(spec->instructions[s]);
      const auto& delegate = delegates.at(delegate_call.delegate);
      auto backend = backends_->find(delegate.backend_id);
      if (!backend.ok())
        return backend.error().with_context(fmt::format("method '{}', instruction {}", name, s));
      if (auto available = (*backend)->is_available(); !available.ok())
        return available.error().with_context(
            fmt::format("method '{}' needs backend '{}', which is unavailable", name, delegate.backend_id));
      const DelegateContext context = delegate_context(method->values_, *spec, delegate_call);
      auto instance = (*backend)->init(loaded_->segment(delegate.payload_segment), delegate.compile_specs, context);
      if (!instance.ok())
        return instance.error().with_context(
            fmt::format("method '{}': initializing backend '{}'", name, delegate.backend_id));
      method->delegates_.emplace_back(*backend, instance->handle);
      KESTREL_RETURN_IF_ERROR(
          check_output_order(name, delegate.backend_id, instance->output_order, delegate_call.outputs.size()));
      step.backend_id = (*backend)->id();
      step.backend = backend->get();
      step.delegate_handle = instance->handle;
      step.inputs = delegate_call.inputs;
      // Bind by exported index: the backend's k-th output is exported output output_order[k].
      for (int32_t exported : instance->output_order) step.outputs.push_back(delegate_call.outputs[exported]);
    }
    method->steps_.push_back(std::move(step));
  }
  // Every step's views in one array, in execution order: a step reads its views from the lines
  // right after the previous step's.
  size_t view_count = 0;
  for (const Method::Step& step : method->steps_) view_count += step.inputs.size() + step.outputs.size();
  method->views_.resize(view_count);
  size_t next_view = 0;
  for (Method::Step& step : method->steps_) {
    auto gather = [&](const std::vector<int32_t>& values) {
      std::span<TensorView> views(method->views_.data() + next_view, values.size());
      next_view += values.size();
      for (size_t i = 0; i < values.size(); ++i) {
        views[i] = method->values_[values[i]];
        if (const ValueKind kind = spec->values[values[i]].kind;
            kind == ValueKind::kInput || kind == ValueKind::kOutput || kind == ValueKind::kAlias)
          method->bindable_views_.emplace_back(&views[i], values[i]);
      }
      return views;
    };
    step.input_views = gather(step.inputs);
    step.output_views = gather(step.outputs);
  }
  method->scratch_ = AlignedBuffer(scratch_bytes);
  return method;
}

}  // namespace kestrel::runtime
