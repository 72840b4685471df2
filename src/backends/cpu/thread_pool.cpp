#include "backends/cpu/thread_pool.h"

#include <algorithm>
#include <chrono>

namespace kestrel::cpu::detail {

namespace {

// How long an idle worker spins before it sleeps: long enough to bridge the gaps between the
// kernel calls of a decode step, short enough not to hold a core when nothing runs.
constexpr auto kSpinTime = std::chrono::microseconds(150);

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

constexpr uint64_t pack(uint32_t generation, uint64_t count, uint64_t next) {
  return (static_cast<uint64_t>(generation) << 32) | (count << 16) | next;
}
constexpr uint32_t generation_of(uint64_t word) { return static_cast<uint32_t>(word >> 32); }
constexpr uint64_t count_of(uint64_t word) { return (word >> 16) & 0xffff; }
constexpr uint64_t next_of(uint64_t word) { return word & 0xffff; }

}  // namespace

CpuThreadPool::CpuThreadPool(int threads) : threads_(threads < 1 ? 1 : threads) {}

void CpuThreadPool::start() {
  if (started_.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(submit_);
  if (started_.load(std::memory_order_relaxed)) return;
  workers_.reserve(static_cast<size_t>(threads_ - 1));
  for (int i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
  started_.store(true, std::memory_order_release);
}

CpuThreadPool::~CpuThreadPool() {
  stop_.store(true, std::memory_order_seq_cst);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& worker : workers_) worker.join();
}

void CpuThreadPool::run(int64_t count, TaskFn fn, void* ctx) {
  if (count <= 0) return;
  if (threads_ == 1 || count == 1 || count > kMaxTasks || !started_.load(std::memory_order_acquire) ||
      !submit_.try_lock()) {
    for (int64_t task = 0; task < count; ++task) fn(ctx, task, 0);
    return;
  }
  fn_ = fn;
  ctx_ = ctx;
  done_.store(0, std::memory_order_relaxed);
  const uint32_t generation = generation_.load(std::memory_order_relaxed) + 1;
  claim_.store(pack(generation, static_cast<uint64_t>(count), 0), std::memory_order_release);
  // seq_cst store then seq_cst load of sleepers_, against the worker's seq_cst increment of
  // sleepers_ then seq_cst load in wait(): one of the two sides sees the other, so a worker
  // never sleeps through a job it should have been woken for.
  generation_.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) generation_.notify_all();

  work(generation, 0);
  for (int spins = 0; done_.load(std::memory_order_acquire) < count; ++spins) {
    if (spins < 4096) {
      cpu_relax();
    } else {
      std::this_thread::yield();  // a worker holding a task was descheduled
    }
  }
  submit_.unlock();
}

void CpuThreadPool::work(uint32_t generation, int thread) {
  uint64_t word = claim_.load(std::memory_order_acquire);
  while (generation_of(word) == generation && next_of(word) < count_of(word)) {
    if (!claim_.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel, std::memory_order_acquire))
      continue;
    // The claimed task is unfinished, so its job is still the published one: fn_/ctx_ hold.
    fn_(ctx_, static_cast<int64_t>(next_of(word)), thread);
    done_.fetch_add(1, std::memory_order_release);
    word = claim_.load(std::memory_order_acquire);
  }
}

void CpuThreadPool::worker_loop(int index) {
  // The generation at construction, not at thread start: a worker that starts late must still
  // notice every job (and the stop) published since the pool was made.
  uint32_t seen = 0;
  while (true) {
    uint32_t current = generation_.load(std::memory_order_acquire);
    if (current == seen) {
      const auto start = std::chrono::steady_clock::now();
      for (int spins = 1; current == seen; ++spins) {
        cpu_relax();
        current = generation_.load(std::memory_order_acquire);
        if (spins % 128 == 0 && std::chrono::steady_clock::now() - start > kSpinTime) break;
      }
      if (current == seen) {
        if (stop_.load(std::memory_order_acquire)) return;
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        generation_.wait(seen, std::memory_order_seq_cst);
        sleepers_.fetch_sub(1, std::memory_order_seq_cst);
        continue;
      }
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen = current;
    work(current, index);
  }
}

namespace ranges_internal {

void run_part(void* ctx, int64_t part, int thread) {
  Job& job = *static_cast<Job*>(ctx);
  auto call = [&](uint64_t lo, uint64_t hi) {
    job.fn(job.ctx, static_cast<int64_t>(lo) * job.unit, std::min(job.count, static_cast<int64_t>(hi) * job.unit),
           thread);
  };
  const auto piece = static_cast<uint64_t>(job.piece_units);
  // Own range, front to back.
  std::atomic<uint64_t>& own = job.ranges[part].bounds;
  uint64_t bounds = own.load(std::memory_order_acquire);
  while (true) {
    const uint64_t lo = bounds >> 32, hi = bounds & 0xffffffffu;
    if (lo >= hi) break;
    const uint64_t take = std::min(piece, hi - lo);
    if (own.compare_exchange_weak(bounds, ((lo + take) << 32) | hi, std::memory_order_acq_rel,
                                  std::memory_order_acquire)) {
      call(lo, lo + take);
      bounds = own.load(std::memory_order_acquire);
    }
  }
  // Then the others' ranges, back to front.
  for (int64_t step = 1; step < job.parts; ++step) {
    std::atomic<uint64_t>& other = job.ranges[(part + step) % job.parts].bounds;
    uint64_t theirs = other.load(std::memory_order_acquire);
    while (true) {
      const uint64_t lo = theirs >> 32, hi = theirs & 0xffffffffu;
      if (lo >= hi) break;
      const uint64_t take = std::min(piece, hi - lo);
      if (other.compare_exchange_weak(theirs, (lo << 32) | (hi - take), std::memory_order_acq_rel,
                                      std::memory_order_acquire)) {
        call(hi - take, hi);
        theirs = other.load(std::memory_order_acquire);
      }
    }
  }
}

}  // namespace ranges_internal

}  // namespace kestrel::cpu::detail
