// The optimized kernels' thread pool: `threads - 1` workers started by start() (when a kernel
// using the pool is prepared, never inside a kernel call), woken per job, spinning briefly before they sleep (a decode step
// issues a job every few microseconds, so a sleeping worker would cost a futex wake-up per op).
//
// A job is `count` independent tasks; the caller and the workers claim task indices from one
// atomic word that also carries the job's generation and size, so a worker that wakes late can
// never run a task of a finished job. The caller returns once every task has finished; it never
// waits for a worker that did not take part. Nothing here allocates after construction.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <vector>

#include "kestrel/runtime/kernel.h"

namespace kestrel::cpu::detail {

class CpuThreadPool final : public runtime::ThreadPool {
 public:
  // The most tasks one job may have; larger jobs run on the calling thread.
  static constexpr int64_t kMaxTasks = 0xffff;

  explicit CpuThreadPool(int threads);
  ~CpuThreadPool() override;
  CpuThreadPool(const CpuThreadPool&) = delete;
  CpuThreadPool& operator=(const CpuThreadPool&) = delete;

  int threads() const override { return threads_; }
  void start() override;
  // When another thread is running a job on this pool, or its workers have not been started,
  // the tasks run on the calling thread (as participant 0).
  void run(int64_t count, TaskFn fn, void* ctx) override;

 private:
  void worker_loop(int index);
  // Claims and runs tasks of the job of `generation` until none is left.
  void work(uint32_t generation, int thread);

  const int threads_;
  std::vector<std::thread> workers_;  // started under submit_
  std::atomic<bool> started_{false};
  std::mutex submit_;  // one job at a time

  // The published job; written by the submitting thread before it bumps `claim_`/`generation_`
  // and stable until every task has finished.
  TaskFn fn_ = nullptr;
  void* ctx_ = nullptr;

  // [generation:32][count:16][next:16]: the next task index of the current job.
  alignas(64) std::atomic<uint64_t> claim_{0};
  alignas(64) std::atomic<int64_t> done_{0};
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
};

// The most participants parallel_ranges splits a job into (more threads share the ranges).
inline constexpr int kMaxRangeParts = 64;

namespace ranges_internal {
struct alignas(64) Range {
  std::atomic<uint64_t> bounds{0};  // [lo:32][hi:32] in units
};
struct Job {
  void (*fn)(void* ctx, int64_t begin, int64_t end, int thread) = nullptr;
  void* ctx = nullptr;
  int64_t count = 0, unit = 1, piece_units = 1, parts = 1;
  Range* ranges = nullptr;
};
void run_part(void* job, int64_t part, int thread);
}  // namespace ranges_internal

// Calls fn(begin, end, thread) on pieces that together cover [0, count) exactly once.
// [0, count) is cut into units of `unit` items (the last may be shorter) and every piece is a
// run of whole units. Each participant owns one contiguous range of units and walks it front
// to back in pieces of `piece_units`, so its memory stream stays sequential (prefetching carries
// across pieces); one that runs out takes pieces from the back of the other ranges, which
// balances a late or descheduled thread without cutting every stream into small tasks.
// `pool` may be null (everything runs on the caller).
template <typename F>
void parallel_ranges(runtime::ThreadPool* pool, int64_t count, int64_t unit, int64_t piece_units, F&& fn) {
  if (count <= 0) return;
  unit = std::max<int64_t>(unit, 1);
  const int64_t units = (count + unit - 1) / unit;
  const int64_t threads = pool != nullptr ? pool->threads() : 1;
  const int64_t parts = std::min<int64_t>({threads, units, kMaxRangeParts});
  if (parts <= 1 || units > 0xffffffffll) {
    fn(int64_t{0}, count, 0);
    return;
  }
  ranges_internal::Range ranges[kMaxRangeParts];
  for (int64_t p = 0; p < parts; ++p) {
    const auto lo = static_cast<uint64_t>(units * p / parts), hi = static_cast<uint64_t>(units * (p + 1) / parts);
    ranges[p].bounds.store((lo << 32) | hi, std::memory_order_relaxed);
  }
  ranges_internal::Job job;
  using Fn = std::remove_reference_t<F>;
  job.fn = [](void* ctx, int64_t begin, int64_t end, int thread) { (*static_cast<Fn*>(ctx))(begin, end, thread); };
  job.ctx = const_cast<void*>(static_cast<const void*>(&fn));
  job.count = count;
  job.unit = unit;
  job.piece_units = std::max<int64_t>(piece_units, 1);
  job.parts = parts;
  job.ranges = ranges;
  pool->run(parts, &ranges_internal::run_part, &job);  // publishes the ranges (release)
}

// fn(task, thread) for every task in [0, count); `pool` may be null.
template <typename F>
void parallel_for(runtime::ThreadPool* pool, int64_t count, F&& fn) {
  if (pool == nullptr || pool->threads() == 1 || count <= 1) {
    for (int64_t task = 0; task < count; ++task) fn(task, 0);
    return;
  }
  pool->parallel_for(count, fn);
}

}  // namespace kestrel::cpu::detail
