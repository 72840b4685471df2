#include "kernels/reference.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <limits>

namespace kestrel::kernels::reference {

namespace {

// Unflattens a row-major index into coordinates.
Dims coords_of(int64_t flat, const Dims& dims) {
  Dims c(dims.size());
  for (size_t i = dims.size(); i-- > 0;) {
    c[i] = flat % dims[i];
    flat /= dims[i];
  }
  return c;
}

int64_t flat_of(const Dims& coords, const Dims& dims) {
  int64_t flat = 0;
  for (size_t i = 0; i < dims.size(); ++i) flat = flat * dims[i] + coords[i];
  return flat;
}

int64_t numel(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace

Vec linear(const Vec& x, int64_t M, int64_t K, const Vec& w, int64_t N, const Vec& bias) {
  Vec y(M * N);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bias.empty() ? 0.0 : bias[n];
      for (int64_t k = 0; k < K; ++k) s += x[m * K + k] * w[n * K + k];
      y[m * N + n] = s;
    }
  return y;
}

Vec matmul(const Vec& a, const Vec& b, int64_t batch, int64_t M, int64_t K, int64_t N) {
  Vec c(batch * M * N);
  for (int64_t i = 0; i < batch; ++i)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double s = 0.0;
        for (int64_t k = 0; k < K; ++k) s += a[(i * M + m) * K + k] * b[(i * K + k) * N + n];
        c[(i * M + m) * N + n] = s;
      }
  return c;
}

Vec embedding(const Vec& table, int64_t D, const std::vector<int64_t>& ids) {
  Vec out;
  for (int64_t id : ids)
    for (int64_t d = 0; d < D; ++d) out.push_back(table[id * D + d]);
  return out;
}

Vec rms_norm(const Vec& x, int64_t D, const Vec& weight, double eps) {
  Vec out(x.size());
  for (size_t r = 0; r * D < x.size(); ++r) {
    double ms = 0.0;
    for (int64_t i = 0; i < D; ++i) ms += x[r * D + i] * x[r * D + i] / D;
    for (int64_t i = 0; i < D; ++i) out[r * D + i] = x[r * D + i] / std::sqrt(ms + eps) * weight[i];
  }
  return out;
}

Vec layer_norm(const Vec& x, int64_t D, const Vec& weight, const Vec& bias, double eps) {
  Vec out(x.size());
  for (size_t r = 0; r * D < x.size(); ++r) {
    double mean = 0.0;
    for (int64_t i = 0; i < D; ++i) mean += x[r * D + i] / D;
    double var = 0.0;
    for (int64_t i = 0; i < D; ++i) var += (x[r * D + i] - mean) * (x[r * D + i] - mean) / D;
    for (int64_t i = 0; i < D; ++i)
      out[r * D + i] = (x[r * D + i] - mean) / std::sqrt(var + eps) * weight[i] + (bias.empty() ? 0.0 : bias[i]);
  }
  return out;
}

// Each pair is a complex number multiplied by e^{i theta} = cos + i sin.
Vec rope(const Vec& x, int64_t BH, int64_t T, int64_t Dh, const std::vector<int64_t>& positions,
         const Vec& cos, const Vec& sin, const std::string& style, int64_t rotary_dim) {
  Vec out(x);  // dims past the rotary ones keep their values
  const int64_t half = (rotary_dim > 0 ? rotary_dim : Dh) / 2;
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t t = 0; t < T; ++t) {
      const int64_t row = (bh * T + t) * Dh;
      for (int64_t i = 0; i < half; ++i) {
        const int64_t re = style == "half" ? i : 2 * i;
        const int64_t im = style == "half" ? i + half : 2 * i + 1;
        const std::complex<double> rot(cos[positions[t] * half + i], sin[positions[t] * half + i]);
        const std::complex<double> z = std::complex<double>(x[row + re], x[row + im]) * rot;
        out[row + re] = z.real();
        out[row + im] = z.imag();
      }
    }
  return out;
}

Vec softmax(const Vec& x, const Dims& dims, int axis) {
  Vec out(x.size());
  for (int64_t flat = 0; flat < static_cast<int64_t>(x.size()); ++flat) {
    Dims c = coords_of(flat, dims);
    double max = -std::numeric_limits<double>::infinity();
    for (int64_t i = 0; i < dims[axis]; ++i) {
      c[axis] = i;
      max = std::max(max, x[flat_of(c, dims)]);
    }
    double sum = 0.0;
    for (int64_t i = 0; i < dims[axis]; ++i) {
      c[axis] = i;
      sum += std::exp(x[flat_of(c, dims)] - max);
    }
    out[flat] = std::exp(x[flat] - max) / sum;
  }
  return out;
}

// Full scores over all C slots with an explicit -inf mask, then a plain softmax.
Vec attention(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t Hq, int64_t Hkv,
              int64_t T, int64_t C, int64_t Dh, const std::vector<int64_t>& positions, double scale,
              int64_t window) {
  Vec out(B * Hq * T * Dh);
  const int64_t heads_per_kv = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t g = h / heads_per_kv;
      for (int64_t t = 0; t < T; ++t) {
        Vec scores(C);
        for (int64_t s = 0; s < C; ++s) {
          if (s > positions[t] || (window > 0 && s <= positions[t] - window)) {
            scores[s] = -std::numeric_limits<double>::infinity();
            continue;
          }
          double d = 0.0;
          for (int64_t i = 0; i < Dh; ++i)
            d += q[((b * Hq + h) * T + t) * Dh + i] * k[((b * Hkv + g) * C + s) * Dh + i];
          scores[s] = d * scale;
        }
        Vec p = softmax(scores, {C}, 0);
        for (int64_t i = 0; i < Dh; ++i) {
          double acc = 0.0;
          for (int64_t s = 0; s < C; ++s)
            if (p[s] != 0.0) acc += p[s] * v[((b * Hkv + g) * C + s) * Dh + i];
          out[((b * Hq + h) * T + t) * Dh + i] = acc;
        }
      }
    }
  return out;
}

double silu(double x) { return x / (1.0 + std::exp(-x)); }
double gelu_erf(double x) { return x * 0.5 * std::erfc(-x / std::sqrt(2.0)); }
double gelu_tanh(double x) {
  const double pi = std::acos(-1.0);
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}

Vec transpose(const Vec& x, const Dims& dims, const Dims& perm) {
  Dims out_dims(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) out_dims[i] = dims[perm[i]];
  Vec out(x.size());
  for (int64_t flat = 0; flat < numel(out_dims); ++flat) {
    const Dims oc = coords_of(flat, out_dims);
    Dims ic(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) ic[perm[i]] = oc[i];
    out[flat] = x[flat_of(ic, dims)];
  }
  return out;
}

Vec index_copy(const Vec& dst, const Dims& dims, int axis, const std::vector<int64_t>& index,
               const Vec& src) {
  Vec out = dst;
  Dims src_dims = dims;
  src_dims[axis] = static_cast<int64_t>(index.size());
  for (int64_t flat = 0; flat < numel(src_dims); ++flat) {
    Dims c = coords_of(flat, src_dims);
    c[axis] = index[c[axis]];
    out[flat_of(c, dims)] = src[flat];
  }
  return out;
}

Vec slice(const Vec& x, const Dims& dims, int axis, int64_t start, int64_t end) {
  Vec out;
  for (int64_t flat = 0; flat < numel(dims); ++flat) {
    const Dims c = coords_of(flat, dims);
    if (c[axis] >= start && c[axis] < end) out.push_back(x[flat]);
  }
  return out;
}

}  // namespace kestrel::kernels::reference
