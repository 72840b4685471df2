#include "kestrel/core/tensor.h"

#include <fmt/format.h>

#include <algorithm>

namespace kestrel {

Shape::Shape(std::initializer_list<int64_t> dims) : Shape(std::span<const int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const int64_t> dims) {
  rank_ = static_cast<int>(std::min<size_t>(dims.size(), kMaxRank));
  std::copy_n(dims.begin(), rank_, dims_.begin());
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= dims_[i];
  return n;
}

std::string dims_string(std::span<const int64_t> dims) { return fmt::format("[{}]", fmt::join(dims, ", ")); }

std::string Shape::to_string() const { return dims_string(dims()); }

// Element by element rather than std::equal, which becomes a library memcmp call: kernels
// compare a few shapes on every call.
bool Shape::operator==(const Shape& other) const {
  if (rank_ != other.rank_) return false;
  for (int i = 0; i < rank_; ++i)
    if (dims_[i] != other.dims_[i]) return false;
  return true;
}

Shape contiguous_strides(const Shape& shape) {
  Shape strides = shape;
  int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    strides[i] = stride;
    stride *= shape[i];
  }
  return strides;
}

TensorView TensorView::contiguous(DType dtype, const Shape& shape, void* data) {
  return TensorView{dtype, shape, contiguous_strides(shape), data};
}

// strides == contiguous_strides(shape), without building the strides (every kernel call asks).
bool TensorView::is_contiguous() const {
  if (strides.rank() != shape.rank()) return false;
  int64_t stride = 1;
  for (int i = shape.rank() - 1; i >= 0; --i) {
    if (strides[i] != stride) return false;
    stride *= shape[i];
  }
  return true;
}

Result<size_t> TensorView::storage_bytes() const {
  return dtype_storage_bytes(dtype, numel(), shape.rank() == 0 ? 1 : shape.dim(-1));
}

}  // namespace kestrel
