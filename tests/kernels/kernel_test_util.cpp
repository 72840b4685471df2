#include "kernels/kernel_test_util.h"

#include <cstring>
#include <random>

#include "kestrel/kernels/portable.h"
#include "kestrel/kernels/quantize.h"

namespace kestrel::kernels::testing {

namespace {
size_t storage_bytes(DType dtype, const Shape& shape) {
  auto bytes = dtype_storage_bytes(dtype, shape.numel(), shape.rank() == 0 ? 1 : shape.dim(-1));
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  return bytes.ok() ? *bytes : 0;
}
}  // namespace

HostTensor::HostTensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(shape), buffer_(storage_bytes(dtype, shape)) {}

HostTensor HostTensor::from_floats(DType dtype, Shape shape, const std::vector<float>& values) {
  HostTensor t(dtype, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  switch (dtype) {
    case DType::kF32:
      std::memcpy(t.bytes(), values.data(), values.size() * sizeof(float));
      break;
    case DType::kF16:
    case DType::kBF16: {
      auto* out = reinterpret_cast<uint16_t*>(t.bytes());
      for (size_t i = 0; i < values.size(); ++i)
        out[i] = dtype == DType::kF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
      break;
    }
    case DType::kQ8: {
      const int64_t cols = shape.dim(-1);
      const Status s = quantize_q8(values.data(), t.numel() / cols, cols, t.bytes());
      EXPECT_TRUE(s.ok()) << s.error().to_string();
      break;
    }
    default:
      ADD_FAILURE() << "from_floats: unsupported dtype " << dtype_name(dtype);
  }
  return t;
}

HostTensor HostTensor::from_ints(Shape shape, const std::vector<int64_t>& values) {
  HostTensor t(DType::kI64, shape);
  EXPECT_EQ(static_cast<int64_t>(values.size()), t.numel());
  std::memcpy(t.bytes(), values.data(), values.size() * sizeof(int64_t));
  return t;
}

TensorView HostTensor::view() const {
  return TensorView::contiguous(dtype_, shape_, const_cast<uint8_t*>(buffer_.data()));
}

std::vector<double> HostTensor::values() const {
  const int64_t n = numel();
  std::vector<double> out(static_cast<size_t>(n));
  const uint8_t* p = buffer_.data();
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
        // Block b of the flattened tensor: 2-byte f16 scale, then 32 int8.
        const uint8_t* block = p + (i / kQ8BlockSize) * kQ8BlockBytes;
        uint16_t scale;
        std::memcpy(&scale, block, 2);
        const auto q = static_cast<int8_t>(block[2 + i % kQ8BlockSize]);
        out[i] = static_cast<double>(f16_to_f32(scale)) * q;
        break;
      }
      default:
        ADD_FAILURE() << "values: unsupported dtype " << dtype_name(dtype_);
        return out;
    }
  }
  return out;
}

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> out(static_cast<size_t>(numel()));
  EXPECT_EQ(dtype_, DType::kI64);
  std::memcpy(out.data(), buffer_.data(), out.size() * sizeof(int64_t));
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

Status run_kernel(std::string_view op, const std::vector<TensorView>& inputs,
                  const std::vector<TensorView>& outputs, const program::Attrs& attrs) {
  auto fn = portable_kernel_registry()->find(op);
  if (!fn.ok()) return fn.error();
  std::vector<TensorView> outs = outputs;
  runtime::KernelContext ctx{op, inputs, outs, runtime::AttrReader(op, attrs)};
  return (*fn)(ctx);
}

::testing::AssertionResult all_close(const std::vector<double>& got, const std::vector<double>& want,
                                     double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << "size " << got.size() << " vs expected " << want.size();
  int bad = 0;
  auto failure = ::testing::AssertionFailure();
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]);
    if (!(err <= tol * (1.0 + std::abs(want[i])))) {
      if (bad < 5) failure << "\n  [" << i << "] got " << got[i] << " want " << want[i] << " (err " << err << ")";
      ++bad;
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return failure << "\n  " << bad << " of " << got.size() << " elements outside tol " << tol;
}

::testing::AssertionResult fails_with(const Status& status, ErrorCode code,
                                      std::initializer_list<std::string_view> parts) {
  if (status.ok()) return ::testing::AssertionFailure() << "expected an error, got ok";
  if (status.error().code() != code)
    return ::testing::AssertionFailure() << "expected code " << error_code_name(code) << ", got "
                                         << status.error().to_string();
  for (std::string_view part : parts)
    if (status.error().message().find(part) == std::string::npos)
      return ::testing::AssertionFailure() << "message '" << status.error().message()
                                           << "' lacks '" << part << "'";
  return ::testing::AssertionSuccess();
}

}  // namespace kestrel::kernels::testing
