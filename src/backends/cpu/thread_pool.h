// A small persistent thread pool for kernel calls: `threads - 1` workers created once (with the
// first job), woken
// per job, spinning briefly before they sleep (a decode step issues a job every few
// microseconds, so a sleeping worker would cost a futex wake-up per op).
//
// A job is `count` independent tasks; the caller and the workers claim task indices from one
// atomic word that also carries the job's generation and size, so a worker that wakes late can
// never run a task of a finished job. The caller returns once every task has finished; it never
// waits for a worker that did not take part.
#pragma once

#include <atomic>
#include <memory>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace kestrel::cpu::detail {

class ThreadPool {
 public:
  // The most tasks one job may have.
  static constexpr int64_t kMaxTasks = 0xffff;

  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return threads_; }

  // Calls fn(task) for every task in [0, count) (count <= kMaxTasks), spread over the calling
  // thread and the workers, and returns when all have finished. When another thread is running
  // a job on this pool, or the pool has no workers, the tasks run on the calling thread.
  template <typename F>
  void parallel_for(int64_t count, F&& fn) {
    run(count, [](void* ctx, int64_t task) { (*static_cast<F*>(ctx))(task); }, &fn);
  }

  // Calls fn(begin, end) on pieces that together cover [0, count) exactly once. [0, count) is
  // cut into units of `unit` items (the last may be shorter) and every piece is a run of whole
  // units. Each thread owns one contiguous range of units and walks it front to back in
  // pieces of `piece_units`, so its memory stream stays sequential (prefetching carries across
  // pieces); a thread that runs out takes pieces from the back of the other ranges, which
  // balances a late or descheduled thread without cutting every stream into small tasks.
  template <typename F>
  void parallel_ranges(int64_t count, int64_t unit, int64_t piece_units, F&& fn) {
    RangeJob job;
    job.fn = [](void* ctx, int64_t begin, int64_t end) { (*static_cast<F*>(ctx))(begin, end); };
    job.ctx = &fn;
    run_ranges(count, unit, piece_units, job);
  }

 private:
  struct RangeJob {
    void (*fn)(void* ctx, int64_t begin, int64_t end) = nullptr;
    void* ctx = nullptr;
    int64_t count = 0, unit = 1, piece_units = 1, parts = 1;
    struct alignas(64) Range {
      std::atomic<uint64_t> bounds{0};  // [lo:32][hi:32] in units
    };
    Range* ranges = nullptr;
  };
  void run_ranges(int64_t count, int64_t unit, int64_t piece_units, RangeJob& job);
  static void run_range_task(void* ctx, int64_t part);

  using TaskFn = void (*)(void* ctx, int64_t task);

  void run(int64_t count, TaskFn fn, void* ctx);
  void worker_loop();
  // Claims and runs tasks of the job of `generation` until none is left.
  void work(uint32_t generation);

  const int threads_;
  std::vector<std::thread> workers_;  // started by the first job, under submit_
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

}  // namespace kestrel::cpu::detail
