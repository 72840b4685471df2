// Kernel lookup by op name, typed attribute access for kernels, kernel preparation.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <numeric>
#include <vector>

#include "kestrel/core/aligned_buffer.h"
#include "kestrel/core/error_helpers.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::runtime {

namespace {

// Names of the AttrValue alternatives, in variant order, for "is X, expected Y" messages.
constexpr const char* kAttrTypeNames[] = {"int", "float", "string", "ints", "floats"};
static_assert(std::size(kAttrTypeNames) == std::variant_size_v<program::AttrValue>);

const char* attr_type_name(const program::AttrValue& value) { return kAttrTypeNames[value.index()]; }

// Levenshtein distance; names are short, so the two-row table is plenty.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t substitute = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, substitute});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

// --- AttrReader -------------------------------------------------------------------------------

#define KESTREL_ATTR_LOOKUP(expected)                                                          \
  auto it = attrs_.find(name);                                                                 \
  if (it == attrs_.end())                                                                      \
    return make_error(ErrorCode::kInvalidArgument, "{}: missing attribute '{}' ({})", op_, name, \
                      expected);

Result<int64_t> AttrReader::get_int(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("int")
  if (const auto* v = std::get_if<int64_t>(&it->second)) return *v;
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected int", op_, name,
                    attr_type_name(it->second));
}

int64_t AttrReader::get_int_or(const std::string& name, int64_t fallback) const {
  auto value = get_int(name);
  return value.ok() ? *value : fallback;
}

Result<double> AttrReader::get_float(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("float")
  if (const auto* v = std::get_if<double>(&it->second)) return *v;
  if (const auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected float", op_,
                    name, attr_type_name(it->second));
}

double AttrReader::get_float_or(const std::string& name, double fallback) const {
  auto value = get_float(name);
  return value.ok() ? *value : fallback;
}

Result<std::string> AttrReader::get_string(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("string")
  if (const auto* v = std::get_if<std::string>(&it->second)) return *v;
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected string", op_,
                    name, attr_type_name(it->second));
}

std::string AttrReader::get_string_or(const std::string& name, const std::string& fallback) const {
  auto value = get_string(name);
  return value.ok() ? *value : fallback;
}

Result<std::vector<int64_t>> AttrReader::get_ints(const std::string& name) const {
  KESTREL_ATTR_LOOKUP("ints")
  if (const auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  // An empty list carries no element type, so a serializer may hand it back as floats.
  if (const auto* v = std::get_if<std::vector<double>>(&it->second); v && v->empty())
    return std::vector<int64_t>{};
  return make_error(ErrorCode::kInvalidArgument, "{}: attribute '{}' is {}, expected ints", op_, name,
                    attr_type_name(it->second));
}

#undef KESTREL_ATTR_LOOKUP

// --- KernelRegistry ---------------------------------------------------------------------------

Result<const Kernel*> KernelRegistry::find_kernel(std::string_view op) const {
  auto it = kernels_.find(op);
  if (it != kernels_.end()) return &it->second;
  if (kernels_.empty())
    return make_error(ErrorCode::kNotFound, "no kernel registered for op '{}' (the registry is empty)",
                      op);
  const std::string* closest = nullptr;
  size_t best = 0;
  for (const auto& [name, kernel] : kernels_) {
    const size_t d = edit_distance(op, name);
    if (closest == nullptr || d < best) {
      closest = &name;
      best = d;
    }
  }
  return make_error(ErrorCode::kNotFound, "no kernel registered for op '{}' (did you mean '{}'?)", op,
                    *closest);
}

Result<KernelFn> KernelRegistry::find(std::string_view op) const {
  KESTREL_ASSIGN_OR_RETURN(const Kernel* kernel, find_kernel(op));
  return kernel->run;
}

std::vector<std::string> KernelRegistry::names() const {
  std::vector<std::string> out;
  out.reserve(kernels_.size());
  for (const auto& [name, kernel] : kernels_) out.push_back(name);
  return out;
}

// --- ConstantCache ----------------------------------------------------------------------------

Result<std::shared_ptr<const void>> ConstantCache::get_or_make(const std::string& key, const Factory& make) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) return it->second;
  KESTREL_ASSIGN_OR_RETURN(std::shared_ptr<const void> made, make());
  entries_.emplace(key, made);
  return made;
}

// --- Preparation ------------------------------------------------------------------------------

void KernelPrepareContext::release_constant(std::span<const uint8_t> bytes) const {
  if (program == nullptr || !program->is_mapped() || bytes.empty()) return;
  const std::span<const uint8_t> file = program->file_span();
  if (bytes.data() < file.data() || bytes.data() + bytes.size() > file.data() + file.size()) return;
  // Whole pages inside the range only: a page shared with a neighbouring constant stays.
  const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes.data()) + bytes.size()) / page * page;
  // The mapping is private and read-only, so dropping pages loses nothing: a later read maps
  // them again from the file. A failure only means the pages stay resident.
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

Result<BoundKernel> BoundKernel::prepare(const KernelRegistry& registry, std::string_view op,
                                         const program::Attrs& attrs, std::span<const TensorView> inputs,
                                         std::span<const TensorView> outputs, ConstantCache* constants,
                                         const program::LoadedProgram* program) {
  KESTREL_ASSIGN_OR_RETURN(const Kernel* kernel, registry.find_kernel(op));
  BoundKernel bound;
  bound.op_ = std::string(op);
  bound.attrs_ = attrs;
  bound.run_ = kernel->run;
  bound.pool_ = registry.pool();
  if (bound.pool_ != nullptr) bound.pool_->start();
  if (kernel->prepare != nullptr) {
    KernelPrepareContext ctx{bound.op_, inputs, outputs, AttrReader(bound.op_, bound.attrs_), bound.pool_.get(),
                             constants, program};
    KESTREL_ASSIGN_OR_RETURN(bound.prepared_, kernel->prepare(ctx, kernel->options.get()));
  }
  return bound;
}

Status BoundKernel::run(std::span<const TensorView> inputs, std::span<const TensorView> outputs,
                        std::span<uint8_t> scratch) const {
  Scratch reserve(scratch);
  KernelContext ctx(op_, inputs, outputs, AttrReader(op_, attrs_), pool_.get(), &reserve, prepared_.state.get());
  return run_(ctx);
}

Status run_kernel_once(const KernelRegistry& registry, std::string_view op, std::span<const TensorView> inputs,
                       std::span<const TensorView> outputs, const program::Attrs& attrs) {
  KESTREL_ASSIGN_OR_RETURN(BoundKernel bound, BoundKernel::prepare(registry, op, attrs, inputs, outputs));
  AlignedBuffer scratch(bound.scratch_bytes());
  return bound.run(inputs, outputs, scratch.span());
}

}  // namespace kestrel::runtime
