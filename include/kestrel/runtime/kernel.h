// Kernels are plain functions looked up by op name when a method loads. A kernel may also have
// a prepare step, run once per instruction at load, that decodes its attributes, repacks its
// constant inputs and declares the scratch memory a call needs; every call then gets a context
// with the prepared state, the registry's thread pool and that scratch, so a call allocates
// nothing, creates no thread and does no I/O.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/program/spec.h"

namespace kestrel::program {
class LoadedProgram;
}

namespace kestrel::runtime {

// Read access to an instruction's attributes with clear errors for missing or mistyped ones.
class AttrReader {
 public:
  AttrReader(std::string_view op, const program::Attrs& attrs) : op_(op), attrs_(attrs) {}
  Result<int64_t> get_int(const std::string& name) const;
  int64_t get_int_or(const std::string& name, int64_t fallback) const;
  Result<double> get_float(const std::string& name) const;  // accepts an int attr too
  double get_float_or(const std::string& name, double fallback) const;
  Result<std::string> get_string(const std::string& name) const;
  std::string get_string_or(const std::string& name, const std::string& fallback) const;
  Result<std::vector<int64_t>> get_ints(const std::string& name) const;
  bool has(const std::string& name) const { return attrs_.count(name) != 0; }

 private:
  std::string_view op_;
  const program::Attrs& attrs_;
};

// The threads a kernel call may use: the calling thread plus the pool's workers. Implemented by
// a backend (the optimized CPU kernels' pool); kernels without one run single-threaded.
class ThreadPool {
 public:
  // fn(ctx, task, thread) runs once for every task in [0, count); `thread` is in [0, threads())
  // and names the participant running the task (0 is the caller), for per-thread scratch.
  using TaskFn = void (*)(void* ctx, int64_t task, int thread);

  virtual ~ThreadPool() = default;
  virtual int threads() const = 0;
  // Starts the workers if they are not running yet. Called when a kernel that may use the pool
  // is prepared (at load), so that no call ever creates a thread; a pool nobody prepares for
  // costs no threads.
  virtual void start() {}
  // Returns when every task has finished. Never allocates.
  virtual void run(int64_t count, TaskFn fn, void* ctx) = 0;

  // fn(task, thread) for every task.
  template <typename F>
  void parallel_for(int64_t count, F&& fn) {
    using Fn = std::remove_reference_t<F>;
    run(count, [](void* c, int64_t task, int thread) { (*static_cast<Fn*>(c))(task, thread); },
        const_cast<void*>(static_cast<const void*>(&fn)));
  }
};

// Bump allocation from memory reserved when the method was loaded: each kernel call starts with
// the whole reserve. A request beyond it returns null (the kernel reports an error); it never
// allocates.
class Scratch {
 public:
  static constexpr size_t kAlignment = 64;
  Scratch() = default;
  explicit Scratch(std::span<uint8_t> memory) : memory_(memory) {}

  // Bytes `count` values of T take from a scratch (rounded up to the alignment): what a
  // kernel's prepare step adds up for PreparedKernel::scratch_bytes.
  template <typename T>
  static constexpr size_t bytes_for(size_t count) {
    return (count * sizeof(T) + kAlignment - 1) / kAlignment * kAlignment;
  }
  // `count` uninitialized values of T, 64-byte aligned; null when the reserve is exhausted.
  template <typename T>
  T* take(size_t count) {
    const size_t bytes = bytes_for<T>(count);
    if (bytes > memory_.size() - used_) return nullptr;
    T* out = reinterpret_cast<T*>(memory_.data() + used_);
    used_ += bytes;
    return out;
  }
  size_t capacity() const { return memory_.size(); }
  size_t used() const { return used_; }

 private:
  std::span<uint8_t> memory_;
  size_t used_ = 0;
};

struct KernelContext {
  KernelContext(std::string_view op, std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                AttrReader attrs, ThreadPool* pool = nullptr, Scratch* scratch = nullptr, const void* state = nullptr)
      : op(op), inputs(inputs), outputs(outputs), attrs(attrs), pool(pool), scratch(scratch), state(state) {}

  std::string_view op;
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  AttrReader attrs;
  ThreadPool* pool;     // null: run single-threaded
  Scratch* scratch;     // null or the reserve the kernel's prepare step asked for
  const void* state;    // what the kernel's prepare step made (null without one)
};

using KernelFn = Status (*)(KernelContext& ctx);

// Prepared forms of a program's constants (weights repacked for a backend's kernels), made once
// and shared by every method of the program, so prefill and decode hold one copy.
class ConstantCache {
 public:
  using Factory = std::function<Result<std::shared_ptr<const void>>()>;
  // The entry under `key`, made by `make` on first use (a failure is not cached).
  Result<std::shared_ptr<const void>> get_or_make(const std::string& key, const Factory& make);

 private:
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const void>> entries_;
};

// What a kernel's prepare step sees: the instruction with its attributes and every input and
// output's dtype and shape. `data` is set for constants only (null for everything bound or
// computed at run time).
struct KernelPrepareContext {
  std::string_view op;
  std::span<const TensorView> inputs;
  std::span<const TensorView> outputs;
  AttrReader attrs;
  ThreadPool* pool = nullptr;            // the pool calls will get (may be null)
  ConstantCache* constants = nullptr;    // null: nothing is shared
  const program::LoadedProgram* program = nullptr;

  // Tells the OS that these constant bytes will not be read for a while (a kernel that has
  // repacked a weight reads only its copy): their pages leave the resident set and are read
  // again from the file if someone needs them. Only acts on a program mapped from a file.
  void release_constant(std::span<const uint8_t> bytes) const;
};

struct PreparedKernel {
  std::shared_ptr<const void> state;  // handed back as KernelContext::state on every call
  size_t scratch_bytes = 0;           // the most a call takes from KernelContext::scratch
};

// `options` is the Kernel's options (the registry's configuration for this kernel).
using KernelPrepareFn = Result<PreparedKernel> (*)(const KernelPrepareContext& ctx, const void* options);

struct Kernel {
  KernelFn run = nullptr;
  KernelPrepareFn prepare = nullptr;     // optional
  std::shared_ptr<const void> options;   // passed to prepare
};

class KernelRegistry {
 public:
  // Registering a name twice replaces the earlier kernel (an optimized set overrides portable).
  void add(std::string op, KernelFn fn) { kernels_[std::move(op)] = Kernel{fn, nullptr, nullptr}; }
  void add(std::string op, Kernel kernel) { kernels_[std::move(op)] = std::move(kernel); }
  // The run function; error naming the op (and the closest registered name) when it is absent.
  Result<KernelFn> find(std::string_view op) const;
  Result<const Kernel*> find_kernel(std::string_view op) const;
  std::vector<std::string> names() const;

  // The pool every kernel call of a method resolved against this registry receives.
  void set_pool(std::shared_ptr<ThreadPool> pool) { pool_ = std::move(pool); }
  const std::shared_ptr<ThreadPool>& pool() const { return pool_; }

 private:
  std::map<std::string, Kernel, std::less<>> kernels_;
  std::shared_ptr<ThreadPool> pool_;
};

// One instruction's kernel, prepared for fixed input and output shapes: what a Method holds per
// kernel instruction, and what tests and benchmarks use to run a single op.
class BoundKernel {
 public:
  // Looks `op` up and runs its prepare step. `inputs` and `outputs` give dtypes and shapes;
  // input data is read only where it is set (constants).
  static Result<BoundKernel> prepare(const KernelRegistry& registry, std::string_view op,
                                     const program::Attrs& attrs, std::span<const TensorView> inputs,
                                     std::span<const TensorView> outputs, ConstantCache* constants = nullptr,
                                     const program::LoadedProgram* program = nullptr);
  // Runs with the given scratch reserve (at least scratch_bytes()).
  Status run(std::span<const TensorView> inputs, std::span<const TensorView> outputs, std::span<uint8_t> scratch) const;
  size_t scratch_bytes() const { return prepared_.scratch_bytes; }
  const std::string& op() const { return op_; }

 private:
  std::string op_;
  program::Attrs attrs_;
  KernelFn run_ = nullptr;
  PreparedKernel prepared_;
  std::shared_ptr<ThreadPool> pool_;
};

// Prepares and runs one op once with its own scratch (allocated here): for tests and tools.
Status run_kernel_once(const KernelRegistry& registry, std::string_view op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs, const program::Attrs& attrs = {});

}  // namespace kestrel::runtime
