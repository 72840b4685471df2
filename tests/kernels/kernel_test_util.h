// Helpers for the kernel tests: owning host tensors, random data, running a kernel by op name
// through the portable registry, and element-wise comparison against float64 references.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "kestrel/core/aligned_buffer.h"
#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/program/spec.h"

namespace kestrel::kernels::testing {

// A contiguous tensor that owns its (64-byte aligned, zeroed) storage.
class HostTensor {
 public:
  HostTensor(DType dtype, Shape shape);
  // Encodes f32 values as `dtype` (f32, f16, bf16, or q8 through quantize_q8).
  static HostTensor from_floats(DType dtype, Shape shape, const std::vector<float>& values);
  static HostTensor from_ints(Shape shape, const std::vector<int64_t>& values);  // i64

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  TensorView view() const;
  uint8_t* bytes() { return buffer_.data(); }
  size_t nbytes() const { return buffer_.size(); }
  // The values the tensor represents, decoded here independently of the kernels' code.
  std::vector<double> values() const;
  std::vector<int64_t> ints() const;

 private:
  DType dtype_;
  Shape shape_;
  AlignedBuffer buffer_;
};

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Looks `op` up in the portable registry and runs it.
Status run_kernel(std::string_view op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs, const program::Attrs& attrs = {});

// |got - want| <= tol * (1 + |want|) for every element, reporting the first few mismatches.
::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want,
                                     double tol);

// The status is an error with `code` whose message contains every one of `parts`.
::testing::AssertionResult fails_with(const Status& status, ErrorCode code,
                                      std::initializer_list<std::string_view> parts);
template <typename T>
::testing::AssertionResult fails_with(const Result<T>& result, ErrorCode code,
                                      std::initializer_list<std::string_view> parts) {
  if (result.ok()) return ::testing::AssertionFailure() << "expected an error, got a value";
  return fails_with(Status(result.error()), code, parts);
}

}  // namespace kestrel::kernels::testing
