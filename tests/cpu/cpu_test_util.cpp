#include "cpu/cpu_test_util.h"

#include <cmath>
#include <cstring>
#include <random>

#include "kestrel/kernels/quantize.h"

namespace kestrel::cpu::testing {

namespace {

size_t storage_bytes(DType dtype, const Shape& shape) {
  auto bytes = dtype_storage_bytes(dtype, shape.numel(), shape.rank() == 0 ? 1 : shape.dim(-1));
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  return bytes.ok() ? *bytes : 0;
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(shape), storage_(storage_bytes(dtype, shape)) {}

Tensor Tensor::from_floats(DType dtype, Shape shape, const std::vector<float>& values) {
  Tensor t(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  switch (dtype) {
    case DType::kF32:
      if (!values.empty()) std::memcpy(t.bytes(), values.data(), values.size() * sizeof(float));
      break;
    case DType::kF16:
    case DType::kBF16: {
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::kF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(t.bytes() + 2 * i, &h, 2);
      }
      break;
    }
    case DType::kQ8: {
      const int64_t cols = shape.dim(-1);
      if (t.numel() == 0) break;
      const Status s = kernels::quantize_q8(values.data(), t.numel() / cols, cols, t.bytes());
      EXPECT_TRUE(s.ok()) << s.error().to_string();
      break;
    }
    default:
      ADD_FAILURE() << "from_floats: unsupported dtype " << dtype_name(dtype);
  }
  return t;
}

Tensor Tensor::from_ints(Shape shape, const std::vector<int64_t>& values) {
  Tensor t(DType::kI64, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  if (!values.empty()) std::memcpy(t.bytes(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

TensorView Tensor::view() const {
  return TensorView::contiguous(dtype_, shape_, storage_.empty() ? nullptr : const_cast<uint8_t*>(storage_.data()));
}

std::vector<double> Tensor::values() const {
  const int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  const uint8_t* p = storage_.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (dtype_) {
      case DType::kF32: {
        float f;
        std::memcpy(&f, p + i * 4, 4);
        out[i] = f;
        break;
      }
      case DType::kF16:
      case DType::kBF16: {
        uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        out[i] = dtype_ == DType::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
        break;
      }
      case DType::kI64: {
        int64_t v;
        std::memcpy(&v, p + i * 8, 8);
        out[i] = static_cast<double>(v);
        break;
      }
      case DType::kQ8: {
        // Block b of a row: f16 scale, then 32 int8 values.
        const int64_t cols = shape_.dim(-1);
        const int64_t row = i / cols, col = i % cols;
        const uint8_t* block = p + (row * (cols / kQ8BlockSize) + col / kQ8BlockSize) * kQ8BlockBytes;
        uint16_t scale;
        std::memcpy(&scale, block, 2);
        const auto q = static_cast<int8_t>(block[2 + col % kQ8BlockSize]);
        out[i] = static_cast<double>(f16_to_f32(scale)) * q;
        break;
      }
      default:
        ADD_FAILURE() << "values: unsupported dtype";
    }
  }
  return out;
}

std::vector<float> Tensor::floats() const {
  EXPECT_EQ(dtype_, DType::kF32);
  std::vector<float> out(static_cast<size_t>(numel()));
  if (!out.empty()) std::memcpy(out.data(), storage_.data(), out.size() * sizeof(float));
  return out;
}

std::vector<Isa> simd_isas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kAvx2, Isa::kAvxVnni, Isa::kAvx512Vnni, Isa::kAvx512Bf16, Isa::kAvx512Amx})
    if (isa_supported(isa)) isas.push_back(isa);
  if (isas.empty()) isas.push_back(Isa::kAvx2);
  return isas;
}

std::string isa_label(Isa isa) { return std::string(isa_name(isa)); }

bool rounds_bf16_activations(Isa isa) { return isa == Isa::kAvx512Bf16 || isa == Isa::kAvx512Amx; }

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

std::shared_ptr<const runtime::KernelRegistry> registry(int threads, Isa isa, bool q8_quantize_activations) {
  CpuKernelOptions options;
  options.threads = threads;
  options.isa = isa;
  options.q8_quantize_activations = q8_quantize_activations;
  return optimized_kernel_registry(options);
}

Status run(const runtime::KernelRegistry& registry, std::string_view op, const std::vector<TensorView>& inputs,
           const std::vector<TensorView>& outputs, const program::Attrs& attrs) {
  std::vector<TensorView> outs = outputs;
  return runtime::run_kernel_once(registry, op, inputs, outs, attrs);
}

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want, double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " != " << want.size();
  int bad = 0;
  auto failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= tol * (1.0 + std::fabs(want[i])))) {
      if (bad < 5) failure << "\n  [" << i << "] got " << got[i] << " want " << want[i] << " (err " << err << ")";
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << bad << " of " << got.size() << " elements differ by more than " << tol;
}

::testing::AssertionResult within_bounds(const std::vector<double>& got, const std::vector<double>& want,
                                         const std::vector<double>& bound) {
  if (got.size() != want.size() || got.size() != bound.size())
    return ::testing::AssertionFailure() << "sizes differ";
  int bad = 0;
  auto failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::fabs(got[i] - want[i]);
    if (!(err <= bound[i])) {
      if (bad < 5)
        failure << "\n  [" << i << "] got " << got[i] << " want " << want[i] << " (err " << err << ", bound "
                << bound[i] << ")";
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << bad << " of " << got.size() << " elements out of bounds";
}

::testing::AssertionResult same_bytes(const Tensor& a, const Tensor& b) {
  if (a.storage() == b.storage()) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure() << "storage differs";
  if (a.dtype() == DType::kF32 && b.dtype() == DType::kF32 && a.numel() == b.numel()) {
    const auto x = a.floats(), y = b.floats();
    int shown = 0;
    for (size_t i = 0; i < x.size() && shown < 5; ++i)
      if (std::memcmp(&x[i], &y[i], sizeof(float)) != 0) {
        failure << "\n  [" << i << "] " << x[i] << " vs " << y[i];
        ++shown;
      }
  }
  return failure;
}

}  // namespace kestrel::cpu::testing
