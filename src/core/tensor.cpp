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

bool Shape::operator==(const Shape& other) const {
  return rank_ == other.rank_ && std::equal(dims().begin(), dims().end(), other.dims().begin());
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

bool TensorView::is_contiguous() const { return strides == contiguous_strides(shape); }

Result<size_t> TensorView::storage_bytes() const {
  return dtype_storage_bytes(dtype, numel(), shape.rank() == 0 ? 1 : shape.dim(-1));
}

}  // namespace kestrel
