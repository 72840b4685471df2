// Helpers for the optimized CPU kernel tests: owning tensors stored in exactly-sized vectors
// (so the sanitizer build catches any read past the end), an independent float64 decoding of
// every weight dtype, and running an op through a given registry.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/core/result.h"
#include "kestrel/core/tensor.h"
#include "kestrel/program/spec.h"
#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::testing {

class Tensor {
 public:
  Tensor(DType dtype, Shape shape);
  // Encodes f32 values as `dtype` (f32, f16, bf16, or q8 through quantize_q8).
  static Tensor from_floats(DType dtype, Shape shape, const std::vector<float>& values);
  static Tensor from_ints(Shape shape, const std::vector<int64_t>& values);  // i64

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  TensorView view() const;
  uint8_t* bytes() { return storage_.data(); }
  const std::vector<uint8_t>& storage() const { return storage_; }
  // The values the tensor represents, decoded here independently of the kernels' code.
  std::vector<double> values() const;
  std::vector<float> floats() const;  // f32 tensors only

 private:
  DType dtype_;
  Shape shape_;
  std::vector<uint8_t> storage_;
};

// The SIMD instruction sets this CPU runs (each optimized kernel is tested under every one);
// kAvx2 alone where there is none, which the registry then lowers to the scalar fallback.
std::vector<Isa> simd_isas();
std::string isa_label(Isa isa);
// Whether bf16 weights multiply activations rounded to bf16 with this instruction set: by
// vdpbf16ps (avx512_bf16) or AMX bf16 tiles (avx512_amx), each in its own order. Their bf16
// results are the one exception to the bits agreeing across instruction sets.
bool rounds_bf16_activations(Isa isa);

// The optimized kernel registry with `threads` workers, kernels for `isa`, and q8 activations
// quantized per block unless `q8_quantize_activations` is false.
std::shared_ptr<const runtime::KernelRegistry> registry(int threads, Isa isa = best_supported_isa(),
                                                        bool q8_quantize_activations = true);

std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Runs `op` from `registry`.
Status run(const runtime::KernelRegistry& registry, std::string_view op, const std::vector<TensorView>& inputs,
           const std::vector<TensorView>& outputs, const program::Attrs& attrs = {});

// |got - want| <= tol * (1 + |want|) element-wise, reporting the first few mismatches.
::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want, double tol);
// |got - want| <= bound[i] element-wise.
::testing::AssertionResult within_bounds(const std::vector<double>& got, const std::vector<double>& want,
                                         const std::vector<double>& bound);
// Bitwise equal storage.
::testing::AssertionResult same_bytes(const Tensor& a, const Tensor& b);

}  // namespace kestrel::cpu::testing
