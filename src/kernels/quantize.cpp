#include "kestrel/kernels/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/convert.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::kernels {

namespace {

Status check_cols(std::string_view fn, int64_t cols) {
  if (cols <= 0 || cols % kQ8BlockSize != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "{}: cols ({}) must be a positive multiple of {}", fn, cols, kQ8BlockSize);
  return ok_status();
}

}  // namespace

Status quantize_q8(const float* src, int64_t rows, int64_t cols, uint8_t* dst) {
  KESTREL_RETURN_IF_ERROR(check_cols("quantize_q8", cols));
  if (rows < 0)
    return make_error(ErrorCode::kInvalidArgument, "quantize_q8: negative rows ({})", rows);
  if (rows > 0 && (src == nullptr || dst == nullptr))
    return make_error(ErrorCode::kInvalidArgument, "quantize_q8: null source or destination");
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c0 = 0; c0 < cols; c0 += kQ8BlockSize) {
      const float* x = src + r * cols + c0;
      float max_abs = 0.0f;
      for (int64_t i = 0; i < kQ8BlockSize; ++i) {
        if (!std::isfinite(x[i]))
          return make_error(ErrorCode::kInvalidArgument,
                            "quantize_q8: value {} at row {} col {} is not finite", x[i], r, c0 + i);
        max_abs = std::max(max_abs, std::fabs(x[i]));
      }
      const uint16_t scale_bits = f32_to_f16(max_abs / 127.0f);
      const float scale = detail::half_to_float(scale_bits);
      if (!std::isfinite(scale))
        return make_error(ErrorCode::kOutOfRange,
                          "quantize_q8: block at row {} col {} has max |x| = {}, too large for an "
                          "f16 scale",
                          r, c0, max_abs);
      std::memcpy(dst, &scale_bits, sizeof(scale_bits));
      auto* q = reinterpret_cast<int8_t*>(dst + 2);
      // Divide by the stored (f16-rounded) scale so reconstruction uses the same value; the
      // rounding can push |x / scale| a hair past 127, hence the clamp.
      for (int64_t i = 0; i < kQ8BlockSize; ++i) {
        const float v = scale > 0.0f ? std::round(x[i] / scale) : 0.0f;
        q[i] = static_cast<int8_t>(std::clamp(v, -127.0f, 127.0f));
      }
      dst += kQ8BlockBytes;
    }
  }
  return ok_status();
}

Status dequantize_q8_row(const uint8_t* src, int64_t cols, float* dst) {
  KESTREL_RETURN_IF_ERROR(check_cols("dequantize_q8_row", cols));
  if (src == nullptr || dst == nullptr)
    return make_error(ErrorCode::kInvalidArgument, "dequantize_q8_row: null source or destination");
  detail::dequantize_q8_blocks(src, cols, dst);
  return ok_status();
}

}  // namespace kestrel::kernels
