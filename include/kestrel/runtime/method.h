// A loaded, executable method: values table, resolved instructions, one arena.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "kestrel/core/aligned_buffer.h"
#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/runtime/backend.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::runtime {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kF32;
  Shape shape;
  size_t nbytes = 0;
};

class Method {
 public:
  ~Method();
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

  const std::string& name() const { return spec_->name; }
  size_t num_inputs() const { return spec_->inputs.size(); }
  size_t num_outputs() const { return spec_->outputs.size(); }
  const TensorInfo& input_info(size_t index) const { return input_infos_.at(index); }
  const TensorInfo& output_info(size_t index) const { return output_infos_.at(index); }
  uint64_t arena_bytes() const { return spec_->arena_bytes; }

  // Binds caller-owned memory to an input or output. The memory must stay valid while the
  // method may execute. The view must match the declared dtype and shape.
  Status set_input(size_t index, const TensorView& view);
  Status set_output(size_t index, const TensorView& view);
  // Runs every instruction. Fails if an input or output is unbound.
  Status execute();

  // Wall time per instruction, off unless enabled. enable_profiling() sizes the table, so
  // execute() itself still never allocates; from then on every execute() adds each
  // instruction's time and one call to its row.
  struct InstructionTime {
    std::string op;  // the kernel's op, or "delegate:<backend>"
    double seconds = 0;
    int64_t calls = 0;
  };
  void enable_profiling();
  bool profiling() const { return profiling_; }
  void clear_profile();
  // One row per instruction, in program order (empty while profiling is off).
  const std::vector<InstructionTime>& profile() const { return profile_; }

 private:
  friend class Program;
  Method() = default;

  struct Step;
  Status bind_io(int32_t value_index, const TensorView& view, const TensorInfo& info);
  void refresh_aliases();
  // Copies the data pointers of bound values (and of aliases) into the instructions' views.
  void refresh_step_views();

  std::shared_ptr<const program::LoadedProgram> program_;
  const program::MethodSpec* spec_ = nullptr;
  AlignedBuffer arena_;
  std::vector<TensorView> values_;
  std::vector<bool> bound_;
  std::vector<TensorInfo> input_infos_;
  std::vector<TensorInfo> output_infos_;
  std::vector<Step> steps_;
  std::vector<TensorView> views_;  // every step's input and output views, step by step
  // The instructions' views of inputs, outputs and aliases, whose data pointers change when
  // the caller binds memory: {view, value}. Every other view is final once the method loads.
  std::vector<std::pair<TensorView*, int32_t>> bindable_views_;
  std::vector<std::pair<std::shared_ptr<BackendInterface>, void*>> delegates_;
  AlignedBuffer scratch_;  // the largest reserve any kernel step asked for, reused by every step
  bool profiling_ = false;
  std::vector<InstructionTime> profile_;
};

// A loaded program plus the kernels and backends its methods resolve against.
class Program {
 public:
  static Result<std::shared_ptr<Program>> load(const std::string& path,
                                               std::shared_ptr<const KernelRegistry> kernels,
                                               std::shared_ptr<const BackendRegistry> backends,
                                               const program::LoadOptions& load_options = {});
  static Result<std::shared_ptr<Program>> from_loaded(
      std::shared_ptr<const program::LoadedProgram> loaded,
      std::shared_ptr<const KernelRegistry> kernels,
      std::shared_ptr<const BackendRegistry> backends);

  const program::LoadedProgram& loaded() const { return *loaded_; }
  const program::Metadata& metadata() const { return loaded_->spec().metadata; }
  std::vector<std::string> method_names() const;
  // Resolves every kernel and delegate; errors name the method and the missing kernel/backend.
  Result<std::unique_ptr<Method>> load_method(const std::string& name) const;

 private:
  std::shared_ptr<const program::LoadedProgram> loaded_;
  std::shared_ptr<const KernelRegistry> kernels_;
  std::shared_ptr<const BackendRegistry> backends_;
  // Constants as the kernels prepared them (repacked weights), shared by all methods.
  std::shared_ptr<ConstantCache> prepared_constants_ = std::make_shared<ConstantCache>();
};

}  // namespace kestrel::runtime
