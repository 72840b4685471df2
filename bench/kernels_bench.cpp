// Kernel micro benchmarks: linear at decode shape (one activation row, GEMV) for every weight
// dtype, the portable kernel against the optimized one (one thread and every thread; for q8
// both the int8-dot and the widen-to-f32 variants), and every linear of a decode step of a
// ~110M model with its own weights (memory-bound). bytes_per_second is the weight stream.
//   ./kernels_bench --benchmark_filter='linear/q8'   (Google Benchmark flags apply)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstring>
#include <random>
#include <thread>
#include <vector>

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/core/dtype.h"
#include "kestrel/core/tensor.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/kernels/quantize.h"

namespace {

using namespace kestrel;

struct Variant {
  std::string name;
  std::shared_ptr<const runtime::KernelRegistry> registry;
};

std::vector<uint8_t> encode(DType dtype, const std::vector<float>& values, int64_t rows, int64_t cols) {
  std::vector<uint8_t> out;
  switch (dtype) {
    case DType::kF32:
      out.resize(values.size() * 4);
      std::memcpy(out.data(), values.data(), out.size());
      break;
    case DType::kF16:
    case DType::kBF16:
      out.resize(values.size() * 2);
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t h = dtype == DType::kF16 ? f32_to_f16(values[i]) : f32_to_bf16(values[i]);
        std::memcpy(out.data() + 2 * i, &h, 2);
      }
      break;
    case DType::kQ8:
      out.resize(static_cast<size_t>(rows) * kernels::q8_row_bytes(cols));
      (void)kernels::quantize_q8(values.data(), rows, cols, out.data());
      break;
    default:
      break;
  }
  return out;
}

void linear_gemv(benchmark::State& state, DType dtype, int64_t K, int64_t N,
                 std::shared_ptr<const runtime::KernelRegistry> registry) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<float> w_values(static_cast<size_t>(N * K)), x(static_cast<size_t>(K)), y(static_cast<size_t>(N));
  for (float& v : w_values) v = dist(rng);
  for (float& v : x) v = dist(rng) * 20;
  std::vector<uint8_t> w = encode(dtype, w_values, N, K);
  std::vector<float>().swap(w_values);

  const TensorView xv = TensorView::contiguous(DType::kF32, {1, 1, K}, x.data());
  const TensorView wv = TensorView::contiguous(dtype, {N, K}, w.data());
  std::vector<TensorView> inputs{xv, wv};
  std::vector<TensorView> outputs{TensorView::contiguous(DType::kF32, {1, 1, N}, y.data())};
  const program::Attrs attrs;
  auto fn = registry->find("linear");
  if (!fn.ok()) {
    state.SkipWithError(fn.error().to_string().c_str());
    return;
  }
  runtime::KernelContext ctx{"linear", inputs, outputs, runtime::AttrReader("linear", attrs)};
  for (auto _ : state) {
    const Status status = (*fn)(ctx);
    if (!status.ok()) {
      state.SkipWithError(status.error().to_string().c_str());
      break;
    }
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(w.size()));
}

// Every linear of one decode step of a ~110M llama (12 layers of q, k, v, o, gate, up, down,
// then the 32000-row classifier), each with its own weights: 420 MB in f32, far more than the
// caches, so this is the memory-bound weight stream of a real decode step, without the rest.
void decode_step_linears(benchmark::State& state, DType dtype, std::shared_ptr<const runtime::KernelRegistry> registry) {
  constexpr int64_t D = 768, F = 2048, V = 32000, layers = 12;
  std::vector<std::pair<int64_t, int64_t>> shapes;  // {K, N}
  for (int64_t l = 0; l < layers; ++l)
    for (auto shape : {std::pair{D, D}, std::pair{D, D}, std::pair{D, D}, std::pair{D, D}, std::pair{D, F},
                       std::pair{D, F}, std::pair{F, D}})
      shapes.push_back(shape);
  shapes.emplace_back(D, V);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> dist(-0.05f, 0.05f);
  std::vector<std::vector<uint8_t>> weights;
  int64_t bytes = 0;
  for (const auto& [K, N] : shapes) {
    std::vector<float> values(static_cast<size_t>(K * N));
    for (float& v : values) v = dist(rng);
    weights.push_back(encode(dtype, values, N, K));
    bytes += static_cast<int64_t>(weights.back().size());
  }
  std::vector<float> x(static_cast<size_t>(F)), y(static_cast<size_t>(V));
  for (float& v : x) v = dist(rng) * 20;
  auto fn = registry->find("linear");
  if (!fn.ok()) {
    state.SkipWithError(fn.error().to_string().c_str());
    return;
  }
  const program::Attrs attrs;
  for (auto _ : state) {
    for (size_t i = 0; i < shapes.size(); ++i) {
      const auto [K, N] = shapes[i];
      std::vector<TensorView> inputs{TensorView::contiguous(DType::kF32, {1, K}, x.data()),
                                     TensorView::contiguous(dtype, {N, K}, weights[i].data())};
      std::vector<TensorView> outputs{TensorView::contiguous(DType::kF32, {1, N}, y.data())};
      runtime::KernelContext ctx{"linear", inputs, outputs, runtime::AttrReader("linear", attrs)};
      const Status status = (*fn)(ctx);
      if (!status.ok()) {
        state.SkipWithError(status.error().to_string().c_str());
        return;
      }
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * bytes);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const int all = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  auto optimized = [](int threads, bool q8_quantize) {
    cpu::CpuKernelOptions options;
    options.threads = threads;
    options.q8_quantize_activations = q8_quantize;
    return cpu::optimized_kernel_registry(options);
  };
  // Decode shapes of a ~110M llama (dim 768, ffn 2048, vocab 32000): q/k/v/o, up/gate, down, logits.
  const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 768}, {768, 2048}, {2048, 768}, {768, 32000}};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    std::vector<Variant> variants{{"portable", kernels::portable_kernel_registry()},
                                  {"optimized_t1", optimized(1, true)},
                                  {fmt::format("optimized_t{}", all), optimized(all, true)}};
    if (dtype == DType::kQ8) {
      variants.push_back({"optimized_widened_t1", optimized(1, false)});
      variants.push_back({fmt::format("optimized_widened_t{}", all), optimized(all, false)});
    }
    for (const auto& [K, N] : shapes)
      for (const auto& variant : variants) {
        const std::string name = fmt::format("linear/{}/K{}_N{}/{}", dtype_name(dtype), K, N, variant.name);
        benchmark::RegisterBenchmark(name.c_str(), linear_gemv, dtype, K, N, variant.registry)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    std::vector<Variant> variants{{"portable", kernels::portable_kernel_registry()},
                                  {"optimized_t1", optimized(1, true)},
                                  {fmt::format("optimized_t{}", all), optimized(all, true)}};
    for (const auto& variant : variants) {
      const std::string name = fmt::format("decode_step_linears/{}/{}", dtype_name(dtype), variant.name);
      benchmark::RegisterBenchmark(name.c_str(), decode_step_linears, dtype, variant.registry)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(1.0);
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
