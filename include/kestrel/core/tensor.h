// A non-owning view of a tensor: dtype, shape, strides (in elements) and a data pointer.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "kestrel/core/dtype.h"
#include "kestrel/core/result.h"

namespace kestrel {

inline constexpr int kMaxRank = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  explicit Shape(std::span<const int64_t> dims);

  int rank() const { return rank_; }
  int64_t operator[](int axis) const { return dims_[axis]; }
  int64_t& operator[](int axis) { return dims_[axis]; }
  // Negative axes count from the end: dim(-1) is the last.
  int64_t dim(int axis) const { return dims_[axis < 0 ? axis + rank_ : axis]; }
  int64_t numel() const;
  std::span<const int64_t> dims() const { return {dims_.data(), static_cast<size_t>(rank_)}; }
  std::vector<int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }
  std::string to_string() const;  // "[1, 4, 16]"
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  std::array<int64_t, kMaxRank> dims_{};
  int rank_ = 0;
};

struct TensorView {
  DType dtype = DType::kF32;
  Shape shape;
  Shape strides;  // in elements; contiguous row-major unless a kernel says otherwise
  void* data = nullptr;

  static TensorView contiguous(DType dtype, const Shape& shape, void* data);

  int64_t numel() const { return shape.numel(); }
  bool is_contiguous() const;
  // Bytes of a contiguous tensor of this dtype and shape (q8 counts blocks).
  Result<size_t> storage_bytes() const;

  template <typename T>
  T* as() const { return static_cast<T*>(data); }
};

Shape contiguous_strides(const Shape& shape);

// "[1, 4, 16]" for any number of dims (Shape holds at most kMaxRank; a file may claim more).
std::string dims_string(std::span<const int64_t> dims);

}  // namespace kestrel
