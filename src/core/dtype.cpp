#include "kestrel/core/dtype.h"

#include <bit>
#include <cmath>
#include <cstring>

#include "kestrel/core/error_helpers.h"

namespace kestrel {

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t element_size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "f32", 4}, {DType::kF16, "f16", 2}, {DType::kBF16, "bf16", 2},
    {DType::kI32, "i32", 4}, {DType::kI64, "i64", 8}, {DType::kU8, "u8", 1},
    {DType::kQ8, "q8", 0},
};
}  // namespace

std::string_view dtype_name(DType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return info.name;
  return "invalid";
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& info : kDTypes)
    if (info.name == name) return info.dtype;
  return std::nullopt;
}

bool dtype_is_valid(uint32_t raw) { return raw <= static_cast<uint32_t>(DType::kQ8); }

bool dtype_is_float(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16;
}

size_t dtype_element_size(DType dtype) {
  for (const auto& info : kDTypes)
    if (info.dtype == dtype) return info.element_size;
  return 0;
}

Result<size_t> dtype_storage_bytes(DType dtype, int64_t numel, int64_t last_dim) {
  if (numel < 0) return make_error(ErrorCode::kInvalidArgument, "negative element count {}", numel);
  if (dtype == DType::kQ8) {
    if (last_dim <= 0 || last_dim % kQ8BlockSize != 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "q8 needs the last axis ({}) to be a positive multiple of {}", last_dim,
                        kQ8BlockSize);
    return static_cast<size_t>(numel / kQ8BlockSize) * kQ8BlockBytes;
  }
  if (!dtype_is_valid(static_cast<uint32_t>(dtype)))
    return make_error(ErrorCode::kInvalidArgument, "invalid dtype {}", static_cast<int>(dtype));
  return static_cast<size_t>(numel) * dtype_element_size(dtype);
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  const uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalize
      int e = -1;
      do {
        ++e;
        mantissa <<= 1;
      } while ((mantissa & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mantissa & 0x3ff) << 13;
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  return std::bit_cast<float>(bits);
}

uint16_t f32_to_f16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000);
  const uint32_t abs = bits & 0x7fffffff;
  if (abs >= 0x7f800000u)  // inf or nan
    return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds to inf
  if (abs < 0x38800000u) {                       // subnormal or zero in f16
    const float magnitude = std::bit_cast<float>(abs);
    // 2^-24 is the f16 subnormal step; nearbyint rounds to even in the default mode.
    return sign | static_cast<uint16_t>(std::nearbyint(magnitude * 16777216.0f));
  }
  const uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);
  return sign | static_cast<uint16_t>((rounded - 0x38000000u) >> 13);
}

float bf16_to_f32(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }

uint16_t f32_to_bf16(float f) {
  uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffff) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

}  // namespace kestrel
