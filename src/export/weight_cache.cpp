#include "kestrel/export/weight_cache.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "kestrel/core/error_helpers.h"
#include "kestrel/kernels/quantize.h"

namespace kestrel::exporter {

namespace {

// The read-only private file mapping of this process that holds all of `bytes`, as [low, high)
// addresses (a line "low-high perms offset dev inode path" of /proc/self/maps with perms "r-?p"
// and an inode); nullopt when there is none.
std::optional<std::pair<uintptr_t, uintptr_t>> read_only_file_mapping(std::span<const uint8_t> bytes) {
  const auto begin = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t end = begin + bytes.size();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long low = 0, high = 0, offset = 0, inode = 0;
    unsigned major = 0, minor = 0;
    char perms[5] = {};
    if (std::sscanf(line.c_str(), "%lx-%lx %4s %lx %x:%x %lu", &low, &high, perms, &offset, &major, &minor, &inode) != 7)
      continue;
    if (begin < low || end > high) continue;
    if (inode == 0 || perms[0] != 'r' || perms[1] != '-' || perms[3] != 'p') return std::nullopt;
    return std::pair<uintptr_t, uintptr_t>(low, high);
  }
  return std::nullopt;
}

// Unmaps the pages behind a chunk once it is written, so reading a checkpoint does not leave it
// resident. Only inside a read-only file mapping: there MADV_DONTNEED only drops page table
// entries (a later read faults the same bytes in from the page cache or the file); on other
// memory it would discard data. The range reaches a margin past both ends: a page fault maps
// neighbouring cached pages too ("fault-around", 64 KiB by default), which would otherwise stay
// mapped after their own chunk was released.
void release_pages(std::span<const uint8_t> bytes, std::pair<uintptr_t, uintptr_t> mapping) {
  static const auto page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  constexpr uintptr_t kMargin = uintptr_t{256} << 10;
  if (bytes.empty()) return;
  const auto data = reinterpret_cast<uintptr_t>(bytes.data());
  const uintptr_t begin = std::max(mapping.first, data / page * page - std::min(data / page * page, kMargin));
  const uintptr_t end = std::min(mapping.second, (data + bytes.size() + page - 1) / page * page + kMargin);
  ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);  // advice: failure changes nothing
}

// What one constant is made of: a view of checkpoint bytes and what to do with them.
struct TensorRecipe {
  CheckpointTensor source;
  std::shared_ptr<const void> keepalive;  // the checkpoint's mappings
  DType target = DType::kF32;
  bool plus_one = false;
  size_t chunk_bytes = 0;
  // The read-only file mapping that holds the source, whose pages are dropped once read.
  std::optional<std::pair<uintptr_t, uintptr_t>> mapping;
};

// Buffers kept across the chunks of one tensor: allocating them per chunk would fault fresh pages
// in for every chunk.
struct Scratch {
  std::vector<float> values;
  std::vector<uint8_t> bytes;
};

// Converts one chunk of whole rows and passes it on.
Status convert_chunk(const TensorRecipe& recipe, const CheckpointTensor& chunk, Scratch& scratch,
                     const program::ByteSink& sink) {
  if (recipe.target == chunk.dtype && !recipe.plus_one) return sink(chunk.bytes);
  if (recipe.target == DType::kQ8) {
    // Widened to f32, then quantized row by row ([rows, cols] = shape).
    KESTREL_ASSIGN_OR_RETURN(const std::vector<uint8_t> widened, convert_tensor(chunk, DType::kF32));
    scratch.values.resize(widened.size() / sizeof(float));
    std::memcpy(scratch.values.data(), widened.data(), widened.size());
    const int64_t rows = chunk.shape[0], cols = chunk.shape[1];
    scratch.bytes.resize(static_cast<size_t>(rows) * kernels::q8_row_bytes(cols));
    KESTREL_RETURN_IF_ERROR(kernels::quantize_q8(scratch.values.data(), rows, cols, scratch.bytes.data()));
    return sink(scratch.bytes);
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<uint8_t> converted, convert_tensor(chunk, recipe.target));
  if (recipe.plus_one) {
    for (size_t i = 0; i + sizeof(float) <= converted.size(); i += sizeof(float)) {
      float w;
      std::memcpy(&w, converted.data() + i, sizeof(w));
      w = 1.0f + w;  // transformers computes (1.0 + weight.float()) in f32
      std::memcpy(converted.data() + i, &w, sizeof(w));
    }
  }
  return sink(converted);
}

Status produce(const TensorRecipe& recipe, const program::ByteSink& sink) {
  const CheckpointTensor& source = recipe.source;
  const int64_t rows = source.shape.empty() ? 1 : source.shape[0];
  if (rows == 0) return ok_status();
  const size_t row_bytes = source.bytes.size() / static_cast<size_t>(rows);
  const int64_t rows_per_chunk = std::max<int64_t>(1, static_cast<int64_t>(recipe.chunk_bytes / std::max<size_t>(row_bytes, 1)));
  Scratch scratch;
  for (int64_t begin = 0; begin < rows; begin += rows_per_chunk) {
    const int64_t count = std::min(rows_per_chunk, rows - begin);
    CheckpointTensor chunk = source;
    chunk.bytes = source.bytes.subspan(static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(count) * row_bytes);
    if (!chunk.shape.empty()) chunk.shape[0] = count;
    const Status status = convert_chunk(recipe, chunk, scratch, sink);
    if (recipe.mapping) release_pages(chunk.bytes, *recipe.mapping);
    if (!status.ok()) return status.error().with_context(fmt::format("converting '{}'", source.name));
  }
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<const ConstantData>> WeightCache::recipe(const CheckpointTensor& tensor, DType dtype,
                                                                bool plus_one) {
  const std::string& name = tensor.name;
  const bool as_is = tensor.dtype == dtype && !plus_one;
  if (!as_is && !dtype_is_float(tensor.dtype))
    return make_error(ErrorCode::kInvalidArgument, "converting '{}': cannot convert dtype {}, only f32, f16 and bf16",
                      name, dtype_name(tensor.dtype));
  if (dtype == DType::kQ8) {
    if (tensor.shape.size() != 2)
      return make_error(ErrorCode::kInvalidArgument, "converting '{}': q8 needs a matrix, the tensor has rank {}",
                        name, tensor.shape.size());
    if (tensor.shape[1] % kQ8BlockSize != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "converting '{}' to q8: {} columns are not a multiple of the q8 block size {}", name,
                        tensor.shape[1], kQ8BlockSize);
  } else if (!dtype_is_float(dtype) && !as_is) {
    return make_error(ErrorCode::kInvalidArgument, "converting '{}': cannot convert to dtype {}", name,
                      dtype_name(dtype));
  }
  int64_t numel = 1;
  for (int64_t d : tensor.shape) numel *= d;
  auto bytes = dtype_storage_bytes(dtype, numel, tensor.shape.empty() ? 1 : tensor.shape.back());
  if (!bytes.ok()) return bytes.error().with_context(fmt::format("converting '{}'", name));
  auto recipe = std::make_shared<const TensorRecipe>(TensorRecipe{tensor, checkpoint_.keepalive(), dtype, plus_one,
                                                                   chunk_bytes_, read_only_file_mapping(tensor.bytes)});
  return ConstantData::produced(static_cast<uint64_t>(*bytes),
                                [recipe](const program::ByteSink& sink) { return produce(*recipe, sink); });
}

Result<std::shared_ptr<const ConstantData>> WeightCache::get(const std::string& name, DType dtype) {
  const Key key{name, 0, -1, dtype, false};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, checkpoint_.tensor(name));
  KESTREL_ASSIGN_OR_RETURN(auto data, recipe(tensor, dtype, false));
  cache_.emplace(key, data);
  return data;
}

Result<std::shared_ptr<const ConstantData>> WeightCache::get_rows(const std::string& name, int64_t begin,
                                                                  int64_t count, DType dtype) {
  const Key key{name, begin, count, dtype, false};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, checkpoint_.tensor(name));
  if (tensor.shape.empty() || begin < 0 || count < 0 || begin + count > tensor.shape[0])
    return make_error(ErrorCode::kInvalidArgument, "tensor '{}': rows [{}, {}) are outside its first dimension",
                      name, begin, begin + count);
  const size_t row_bytes = tensor.bytes.size() / static_cast<size_t>(tensor.shape[0]);
  tensor.bytes = tensor.bytes.subspan(static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(count) * row_bytes);
  tensor.shape[0] = count;
  tensor.name = fmt::format("{}[{}:{}]", name, begin, begin + count);
  KESTREL_ASSIGN_OR_RETURN(auto data, recipe(tensor, dtype, false));
  cache_.emplace(key, data);
  return data;
}

Result<std::shared_ptr<const ConstantData>> WeightCache::get_norm(const std::string& name, bool plus_one) {
  if (!plus_one) return get(name, DType::kF32);
  const Key key{name, 0, -1, DType::kF32, true};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  KESTREL_ASSIGN_OR_RETURN(CheckpointTensor tensor, checkpoint_.tensor(name));
  KESTREL_ASSIGN_OR_RETURN(auto data, recipe(tensor, DType::kF32, true));
  cache_.emplace(key, data);
  return data;
}

}  // namespace kestrel::exporter
