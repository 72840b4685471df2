// Kernel micro benchmarks, each kernel prepared as a method prepares it (weights repacked once):
//   linear/...            one activation row (decode) for every weight dtype, the portable
//                         kernel against the optimized one on one thread and on every thread;
//                         bytes_per_second is the weight stream (weights hot in the caches)
//   linear_rows/...       a prompt chunk of M rows: GFLOPS counts 2 * M * N * K per call, to
//                         set against bench/compute_peak. Suffix _cold (M = 128): the weights
//                         come from memory, the activations from the caches, as in a model
//                         (each weight is read once per chunk); without it all stays cached
//   decode_step_linears   every linear of one decode step of a ~110M model, each with its own
//                         weights (memory-bound: the weight stream of a real decode step)
//   prefill_step_linears  the same linears for a chunk of 128 rows (compute-bound)
//   decode_panels_apart_vs_side_by_side  decode steps with 4 panels side by side (a) and apart
//                         (b, DecodePanels::apart), alternated step by step: b_over_a > 1 when
//                         apart is faster (the 110M shape, and q8 and f16 on Qwen3-0.6B's)
//   decode_step_vs_read   the linears of decode steps (one thread) alternated with reads of as
//                         many bytes: linears_over_read is their share of the read bound
//   attention/...         one layer's attention for a decode step or a chunk of 128 queries,
//                         with f32 caches and (suffix _f16kv) f16 caches
//   elementwise/...       silu of an MLP's gate and its product with up, [M, 2048]
//   ./kernels_bench --benchmark_filter='linear/q8'   (Google Benchmark flags apply)
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <thread>
#include <vector>

#include "kestrel/backends/cpu/cpu_kernels.h"
#include "kestrel/core/dtype.h"
#include "kestrel/core/tensor.h"
#include "kestrel/core/aligned_buffer.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/kernels/quantize.h"
#include "read_stream.h"

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

std::vector<float> random_values(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> out(n);
  for (float& v : out) v = dist(rng);
  return out;
}

// The sum of one float per 64-byte line of `values`: reading it brings every line into the
// caches (the sum keeps the reads from being dropped).
float sum_per_line(const std::vector<float>& values) {
  float sum = 0.0f;
  for (size_t i = 0; i < values.size(); i += 16) sum += values[i];
  return sum;
}

// A buffer larger than the last-level cache (64 MiB), read between timed calls of a _cold
// benchmark so that what the call reads comes from memory. Empty when not cold.
std::vector<float> cache_evictor(bool cold) { return std::vector<float>(cold ? size_t{64} << 20 >> 2 : 0); }

// One linear with its weights, prepared once and run many times.
class PreparedLinear {
 public:
  PreparedLinear(const runtime::KernelRegistry& registry, DType dtype, int64_t M, int64_t K, int64_t N, uint32_t seed)
      : M_(M), K_(K), N_(N), x_(random_values(static_cast<size_t>(M * K), seed + 1, 1.0f)),
        y_(static_cast<size_t>(M * N)) {
    w_ = encode(dtype, random_values(static_cast<size_t>(N * K), seed, 0.05f), N, K);
    inputs_ = {TensorView::contiguous(DType::kF32, {M, K}, x_.data()), TensorView::contiguous(dtype, {N, K}, w_.data())};
    outputs_ = {TensorView::contiguous(DType::kF32, {M, N}, y_.data())};
    auto bound = runtime::BoundKernel::prepare(registry, "linear", {}, inputs_, outputs_);
    if (!bound.ok()) {
      error_ = bound.error().to_string();
      return;
    }
    bound_.emplace(std::move(bound).value());
    scratch_ = AlignedBuffer(bound_->scratch_bytes());
  }
  const std::string& error() const { return error_; }
  Status run() { return bound_->run(inputs_, outputs_, scratch_.span()); }
  int64_t weight_bytes() const { return static_cast<int64_t>(w_.size()); }
  // Reads the activations and outputs back into the caches (as a model's previous op leaves them).
  float touch_activations() const { return sum_per_line(x_) + sum_per_line(y_); }
  double flops() const { return 2.0 * static_cast<double>(M_) * static_cast<double>(K_) * static_cast<double>(N_); }

 private:
  int64_t M_, K_, N_;
  std::vector<float> x_, y_;
  std::vector<uint8_t> w_;
  std::vector<TensorView> inputs_, outputs_;
  std::optional<runtime::BoundKernel> bound_;
  AlignedBuffer scratch_;
  std::string error_;
};

void linear_rows(benchmark::State& state, DType dtype, int64_t M, int64_t K, int64_t N, bool cold,
                 std::shared_ptr<const runtime::KernelRegistry> registry) {
  PreparedLinear linear(*registry, dtype, M, K, N, 1);
  if (!linear.error().empty()) {
    state.SkipWithError(linear.error().c_str());
    return;
  }
  const std::vector<float> evict = cache_evictor(cold);
  for (auto _ : state) {
    if (cold) {
      state.PauseTiming();
      benchmark::DoNotOptimize(sum_per_line(evict) + linear.touch_activations());
      state.ResumeTiming();
    }
    const Status status = linear.run();
    if (!status.ok()) {
      state.SkipWithError(status.error().to_string().c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * linear.weight_bytes());
  state.counters["GFLOPS"] =
      benchmark::Counter(linear.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// Prepares `op` as a method prepares it and runs it once per iteration. A non-empty `evict`
// is read, untimed, before every call (the _cold cases). Reports the error to `state` and
// returns false where it could not run.
bool time_op(benchmark::State& state, const runtime::KernelRegistry& registry, std::string_view op,
             const program::Attrs& attrs, const std::vector<TensorView>& inputs, std::vector<TensorView>& outputs,
             const std::vector<float>& evict = {}) {
  auto bound = runtime::BoundKernel::prepare(registry, op, attrs, inputs, outputs);
  if (!bound.ok()) {
    state.SkipWithError(bound.error().to_string().c_str());
    return false;
  }
  AlignedBuffer scratch(bound->scratch_bytes());
  for (auto _ : state) {
    if (!evict.empty()) {
      state.PauseTiming();
      benchmark::DoNotOptimize(sum_per_line(evict));
      state.ResumeTiming();
    }
    const Status status = bound->run(inputs, outputs, scratch.span());
    if (!status.ok()) {
      state.SkipWithError(status.error().to_string().c_str());
      return false;
    }
    benchmark::ClobberMemory();
  }
  return true;
}

// An element-wise op of a prompt chunk's MLP on [rows, 2048] (the ~110M shape's ffn): silu of the
// gate, or its product with the up projection. bytes_per_second counts the inputs read and the
// output written.
void elementwise(benchmark::State& state, std::string op, int64_t rows,
                 std::shared_ptr<const runtime::KernelRegistry> registry) {
  constexpr int64_t F = 2048;
  const auto n = static_cast<size_t>(rows * F);
  std::vector<float> a = random_values(n, 6, 8.0f), b = random_values(n, 7, 1.0f), y(n);
  std::vector<TensorView> inputs{TensorView::contiguous(DType::kF32, {rows, F}, a.data())};
  if (op == "mul") inputs.push_back(TensorView::contiguous(DType::kF32, {rows, F}, b.data()));
  std::vector<TensorView> outputs{TensorView::contiguous(DType::kF32, {rows, F}, y.data())};
  if (!time_op(state, *registry, op, {}, inputs, outputs)) return;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n * sizeof(float)) *
                          static_cast<int64_t>(inputs.size() + 1));
}

// The heads of one attention layer.
struct AttentionShape {
  const char* name;  // "" for the ~110M llama, else a prefix of the benchmark's name
  int64_t Hq, Hkv, Dh;
};

// Attention of one prompt chunk of a layer (a cache of 1024 positions in `cache` elements, f32
// or f16): `T` queries at positions [first, first + T), each over every cache row up to its
// own. GFLOPS counts the flops per (query head, key) pair attended: 2 * Dh for the score and
// 2 * Dh for the weighted sum; bytes_per_second the cache rows read (each once).
void attention_chunk(benchmark::State& state, AttentionShape shape, int64_t T, int64_t first, bool cold, DType cache,
                     std::shared_ptr<const runtime::KernelRegistry> registry) {
  constexpr int64_t C = 1024;
  const int64_t H = shape.Hq, Hkv = shape.Hkv, Dh = shape.Dh;
  std::vector<float> q = random_values(static_cast<size_t>(H * T * Dh), 3, 1.0f);
  std::vector<uint8_t> k = encode(cache, random_values(static_cast<size_t>(Hkv * C * Dh), 4, 1.0f), Hkv * C, Dh);
  std::vector<uint8_t> v = encode(cache, random_values(static_cast<size_t>(Hkv * C * Dh), 5, 1.0f), Hkv * C, Dh);
  std::vector<float> out(q.size());
  std::vector<int64_t> positions(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) positions[static_cast<size_t>(t)] = first + t;
  const std::vector<TensorView> inputs{TensorView::contiguous(DType::kF32, {1, H, T, Dh}, q.data()),
                                       TensorView::contiguous(cache, {1, Hkv, C, Dh}, k.data()),
                                       TensorView::contiguous(cache, {1, Hkv, C, Dh}, v.data()),
                                       TensorView::contiguous(DType::kI64, {T}, positions.data())};
  std::vector<TensorView> outputs{TensorView::contiguous(DType::kF32, {1, H, T, Dh}, out.data())};
  const program::Attrs attrs{{"scale", 0.125}};
  if (!time_op(state, *registry, "attention", attrs, inputs, outputs, cache_evictor(cold))) return;
  const double pairs = static_cast<double>(H) * (static_cast<double>(T) * static_cast<double>(first) +
                                                 static_cast<double>(T) * static_cast<double>(T + 1) / 2);
  state.counters["GFLOPS"] = benchmark::Counter(pairs * 4 * Dh / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  const int64_t rows_read = std::min<int64_t>(C, first + T);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * 2 * Hkv * rows_read * Dh *
                          static_cast<int64_t>(dtype_element_size(cache)));
}

// The linears of one layer of a model, and its depth and classifier: the ~110M llama (dim 768,
// ffn 2048, vocab 32000) or Qwen3-0.6B (dim 1024, 16 query heads and 8 kv heads of 128, ffn
// 3072, 28 layers, vocab 151936).
struct StepShape {
  std::string name;
  int64_t D, q_out, kv_out, F, V, layers;
};
const StepShape kLlama110M{"", 768, 768, 768, 2048, 32000, 12};
const StepShape kQwen3_06B{"qwen3_0.6b/", 1024, 2048, 1024, 3072, 151936, 28};

// Every linear of one step of a model (each layer's q, k, v, o, gate, up and down, then the
// classifier for the last row only), each with its own weights: 420 MB in f32 for the 110M
// llama, far more than the caches. With one row this is the memory-bound weight stream of a
// decode step; with a chunk of rows, the compute of a prefill chunk.
class StepLinears {
 public:
  StepLinears(const runtime::KernelRegistry& registry, DType dtype, int64_t rows, const StepShape& shape = kLlama110M) {
    const auto [name, D, q_out, kv_out, F, V, layers] = shape;
    uint32_t seed = 2;
    for (int64_t l = 0; l < layers; ++l)
      for (auto [K, N] : {std::pair{D, q_out}, std::pair{D, kv_out}, std::pair{D, kv_out}, std::pair{q_out, D},
                          std::pair{D, F}, std::pair{D, F}, std::pair{F, D}})
        linears_.push_back(std::make_unique<PreparedLinear>(registry, dtype, rows, K, N, seed += 2));
    linears_.push_back(std::make_unique<PreparedLinear>(registry, dtype, 1, D, V, seed += 2));
    for (const auto& linear : linears_) {
      if (error_.empty()) error_ = linear->error();
      bytes_ += linear->weight_bytes();
      flops_ += linear->flops();
    }
  }
  const std::string& error() const { return error_; }
  int64_t weight_bytes() const { return bytes_; }
  double flops() const { return flops_; }
  // Runs every linear once; false (and the benchmark skipped with the error) on a failure.
  bool run(benchmark::State& state) {
    for (const auto& linear : linears_) {
      const Status status = linear->run();
      if (!status.ok()) {
        state.SkipWithError(status.error().to_string().c_str());
        return false;
      }
    }
    benchmark::ClobberMemory();
    return true;
  }

 private:
  std::vector<std::unique_ptr<PreparedLinear>> linears_;
  int64_t bytes_ = 0;
  double flops_ = 0;
  std::string error_;
};

void step_linears(benchmark::State& state, DType dtype, int64_t rows,
                  std::shared_ptr<const runtime::KernelRegistry> registry) {
  StepLinears step(*registry, dtype, rows);
  if (!step.error().empty()) {
    state.SkipWithError(step.error().c_str());
    return;
  }
  for (auto _ : state)
    if (!step.run(state)) return;
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * step.weight_bytes());
  state.counters["GFLOPS"] = benchmark::Counter(step.flops() / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// Two registries' decode steps alternated step by step (which goes first alternates too), so
// that a host whose speed drifts by 20-40% within minutes slows both alike: a_gb_s and b_gb_s
// are each one's weight stream over its own summed time, b_over_a their ratio.
void decode_steps_alternated(benchmark::State& state, DType dtype, const StepShape& shape,
                             std::shared_ptr<const runtime::KernelRegistry> a,
                             std::shared_ptr<const runtime::KernelRegistry> b) {
  StepLinears step_a(*a, dtype, 1, shape), step_b(*b, dtype, 1, shape);
  if (!step_a.error().empty() || !step_b.error().empty()) {
    state.SkipWithError((step_a.error() + step_b.error()).c_str());
    return;
  }
  double seconds_a = 0, seconds_b = 0;
  auto timed = [&](StepLinears& step, double& seconds) {
    const auto start = std::chrono::steady_clock::now();
    const bool ok = step.run(state);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return ok;
  };
  bool a_first = true;
  for (auto _ : state) {
    const bool ok = a_first ? timed(step_a, seconds_a) && timed(step_b, seconds_b)
                            : timed(step_b, seconds_b) && timed(step_a, seconds_a);
    if (!ok) return;
    a_first = !a_first;
  }
  const double steps = static_cast<double>(state.iterations());
  state.counters["a_gb_s"] = static_cast<double>(step_a.weight_bytes()) * steps / seconds_a / 1e9;
  state.counters["b_gb_s"] = static_cast<double>(step_b.weight_bytes()) * steps / seconds_b / 1e9;
  state.counters["b_over_a"] = seconds_a / seconds_b;
}

// Decode steps' linears alternated step by step with reads of a buffer of the same size, in
// the ways bench/read_bandwidth reads (one stream, or four side by side with a software prefetch
// 0, 1 or 2 KiB ahead), one thread: the share of the read bound that the weight stream gets,
// with the host's drift cancelled. linears_gb_s is the steps' weight stream, read_gb_s the
// fastest way of reading, linears_over_read their ratio.
void decode_step_vs_read(benchmark::State& state, DType dtype, const StepShape& shape,
                         std::shared_ptr<const runtime::KernelRegistry> registry) {
  StepLinears step(*registry, dtype, 1, shape);
  const auto bytes = static_cast<size_t>(step.weight_bytes());
  const kestrel::bench::MappedWords mapping(bytes, true);
  const uint64_t* buffer = mapping.words();
  if (!step.error().empty() || buffer == nullptr) {
    state.SkipWithError(buffer == nullptr ? "cannot map the read buffer" : step.error().c_str());
    return;
  }
  struct ReadWay {
    size_t streams, prefetch_bytes;
    double seconds = 0;
  };
  std::vector<ReadWay> ways{{1, 0}, {4, 0}, {4, 1024}, {4, 2048}};
  double step_seconds = 0;
  uint64_t sink = 0;
  auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  size_t first_way = 0;
  for (auto _ : state) {
    auto start = std::chrono::steady_clock::now();
    if (!step.run(state)) return;
    step_seconds += since(start);
    for (size_t i = 0; i < ways.size(); ++i) {  // the order rotates, so no way always follows the step
      ReadWay& way = ways[(first_way + i) % ways.size()];
      start = std::chrono::steady_clock::now();
      sink += kestrel::bench::sum_words(buffer, bytes / sizeof(uint64_t), way.streams,
                                        way.prefetch_bytes / sizeof(uint64_t));
      way.seconds += since(start);
    }
    first_way = (first_way + 1) % ways.size();
  }
  benchmark::DoNotOptimize(sink);
  const double streamed = static_cast<double>(bytes) * static_cast<double>(state.iterations()) / 1e9;
  double best = 0;
  for (const ReadWay& way : ways) {
    const double gb_s = streamed / way.seconds;
    state.counters[fmt::format("read_s{}_pf{}", way.streams, way.prefetch_bytes)] = gb_s;
    best = std::max(best, gb_s);
  }
  state.counters["linears_gb_s"] = streamed / step_seconds;
  state.counters["read_gb_s"] = best;
  state.counters["linears_over_read"] = streamed / step_seconds / best;
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
  // Shapes of a ~110M llama (dim 768, ffn 2048, vocab 32000): q/k/v/o, up/gate, down, logits.
  const std::vector<std::pair<int64_t, int64_t>> shapes{{768, 768}, {768, 2048}, {2048, 768}, {768, 32000}};
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    std::vector<Variant> variants{{"portable", kernels::portable_kernel_registry()},
                                  {"optimized_t1", optimized(1, true)},
                                  {fmt::format("optimized_t{}", all), optimized(all, true)}};
    for (const auto& [K, N] : shapes)
      for (const auto& variant : variants) {
        const std::string name = fmt::format("linear/{}/K{}_N{}/{}", dtype_name(dtype), K, N, variant.name);
        benchmark::RegisterBenchmark(name.c_str(), linear_rows, dtype, 1, K, N, false, variant.registry)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8})
    for (int64_t M : {32, 128, 512})
      for (const auto& [K, N] : {std::pair<int64_t, int64_t>{768, 768}, {768, 2048}, {2048, 768}, {3072, 1024}, {8192, 2048}})
        for (const auto& variant : std::vector<Variant>{{"optimized_t1", optimized(1, true)},
                                                        {fmt::format("optimized_t{}", all), optimized(all, true)}}) {
          for (bool cold : {false, true}) {
            if (cold && M != 128) continue;
            const std::string name = fmt::format("linear_rows/{}/M{}_K{}_N{}{}/{}", dtype_name(dtype), M, K, N,
                                                 cold ? "_cold" : "", variant.name);
            benchmark::RegisterBenchmark(name.c_str(), linear_rows, dtype, M, K, N, cold, variant.registry)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
          }
        }
  const std::vector<Variant> attention_variants{{"optimized_t1", optimized(1, true)},
                                                {fmt::format("optimized_t{}", all), optimized(all, true)}};
  // The ~110M llama (12 heads of 64), and the grouped heads of Qwen3-0.6B (16 query heads on 8
  // kv heads of 128) and Llama-3.2-1B (32 on 8 of 64) for decode steps deep in the context and
  // for a prompt chunk.
  const AttentionShape llama110m{"", 12, 12, 64}, qwen3{"qwen3_0.6b_", 16, 8, 128}, llama32{"llama3.2_1b_", 32, 8, 64};
  struct AttentionCase {
    AttentionShape shape;
    int64_t T, first;
  };
  for (const auto& [shape, T, first] :
       {AttentionCase{llama110m, 1, 511}, {llama110m, 1, 127}, {llama110m, 128, 0}, {llama110m, 128, 384},
        {qwen3, 1, 959}, {llama32, 1, 959}, {qwen3, 128, 384}, {llama32, 128, 384}})
    for (bool cold : {false, true})
      for (DType cache : {DType::kF32, DType::kF16})
        for (const auto& variant : attention_variants) {
          const std::string name = fmt::format("attention/{}T{}_from{}{}{}/{}", shape.name, T, first,
                                               cold ? "_cold" : "", cache == DType::kF16 ? "_f16kv" : "", variant.name);
          benchmark::RegisterBenchmark(name.c_str(), attention_chunk, shape, T, first, cold, cache, variant.registry)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    std::vector<Variant> variants{{"portable", kernels::portable_kernel_registry()},
                                  {"optimized_t1", optimized(1, true)},
                                  {fmt::format("optimized_t{}", all), optimized(all, true)}};
    for (const auto& variant : variants) {
      const std::string name = fmt::format("decode_step_linears/{}/{}", dtype_name(dtype), variant.name);
      benchmark::RegisterBenchmark(name.c_str(), step_linears, dtype, 1, variant.registry)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(1.0);
    }
    // Four decode panels side by side (a) against four apart (b), whatever this CPU's default,
    // on the 110M shape and (q8 and f16, one thread) on Qwen3-0.6B's.
    for (const StepShape* shape : {&kLlama110M, &kQwen3_06B})
      for (int threads : {1, all}) {
        if (shape == &kQwen3_06B && (threads != 1 || (dtype != DType::kQ8 && dtype != DType::kF16))) continue;
        auto four_panels = [&](bool apart) {
          cpu::CpuKernelOptions options;
          options.threads = threads;
          options.decode_panels = cpu::DecodePanels{4, 4, 4, 4, apart};
          return cpu::optimized_kernel_registry(options);
        };
        const std::string name = fmt::format("decode_panels_apart_vs_side_by_side/{}{}/t{}", shape->name,
                                             dtype_name(dtype), threads);
        benchmark::RegisterBenchmark(name.c_str(), decode_steps_alternated, dtype, *shape, four_panels(false),
                                     four_panels(true))
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime()
            ->MinTime(2.0);
      }
    for (const StepShape* shape : {&kLlama110M, &kQwen3_06B}) {
      const std::string name = fmt::format("decode_step_vs_read/{}{}/t1", shape->name, dtype_name(dtype));
      benchmark::RegisterBenchmark(name.c_str(), decode_step_vs_read, dtype, *shape, optimized(1, true))
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->MinTime(2.0);
    }
    for (const auto& variant : std::vector<Variant>{{"optimized_t1", optimized(1, true)},
                                                    {fmt::format("optimized_t{}", all), optimized(all, true)}}) {
      const std::string name = fmt::format("prefill_step_linears/{}/M128/{}", dtype_name(dtype), variant.name);
      benchmark::RegisterBenchmark(name.c_str(), step_linears, dtype, 128, variant.registry)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  for (const std::string op : {"silu", "mul"})
    for (int64_t rows : {128, 512})
      for (const auto& variant : std::vector<Variant>{{"optimized_t1", optimized(1, true)},
                                                      {fmt::format("optimized_t{}", all), optimized(all, true)}}) {
        const std::string name = fmt::format("elementwise/{}/M{}_N2048/{}", op, rows, variant.name);
        benchmark::RegisterBenchmark(name.c_str(), elementwise, op, rows, variant.registry)
            ->Unit(benchmark::kMicrosecond)
            ->UseRealTime();
      }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
