// The persistent thread pool: every task runs exactly once, jobs from several submitting
// threads at once, and the inline paths.
#include "backends/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace kestrel::cpu::detail {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  CpuThreadPool pool(4);
  pool.start();
  EXPECT_EQ(pool.threads(), 4);
  for (int job = 0; job < 300; ++job) {
    const int64_t count = job % 97;
    std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
    pool.parallel_for(count, [&](int64_t task, int) { hits[task].fetch_add(1, std::memory_order_relaxed); });
    for (int64_t t = 0; t < count; ++t) ASSERT_EQ(hits[t].load(), 1) << "job " << job << " task " << t;
  }
}

TEST(ThreadPool, WorkersWakeAfterSleeping) {
  CpuThreadPool pool(3);
  pool.start();
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));  // past the spin: workers sleep
    std::atomic<int64_t> sum{0};
    pool.parallel_for(1000, [&](int64_t task, int) { sum.fetch_add(task, std::memory_order_relaxed); });
    EXPECT_EQ(sum.load(), 999 * 1000 / 2);
  }
}

TEST(ThreadPool, SeveralSubmittersShareOnePool) {
  CpuThreadPool pool(3);
  pool.start();
  std::vector<std::thread> submitters;
  std::atomic<int> failures{0};
  for (int s = 0; s < 4; ++s) {
    submitters.emplace_back([&, s] {
      for (int job = 0; job < 200; ++job) {
        const int64_t count = 1 + (job + s) % 50;
        std::vector<int> hits(static_cast<size_t>(count), 0);
        pool.parallel_for(count, [&](int64_t task, int) { hits[task] += 1; });
        for (int h : hits)
          if (h != 1) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : submitters) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, InlinePaths) {
  CpuThreadPool single(1);
  single.start();
  const auto caller = std::this_thread::get_id();
  int ran = 0;
  single.parallel_for(10, [&](int64_t, int) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    ++ran;
  });
  EXPECT_EQ(ran, 10);

  CpuThreadPool pool(2);
  pool.start();
  pool.parallel_for(0, [&](int64_t, int) { ADD_FAILURE() << "no task expected"; });
  std::vector<std::atomic<int>> hits(static_cast<size_t>(CpuThreadPool::kMaxTasks + 5));
  pool.parallel_for(static_cast<int64_t>(hits.size()), [&](int64_t task, int) { hits[task].fetch_add(1); });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, RangesCoverEveryItemOnceOnUnitBoundaries) {
  CpuThreadPool pool(3);
  pool.start();
  for (int64_t count : {0, 1, 3, 4, 5, 17, 100, 1001}) {
    for (int64_t unit : {1, 4, 7}) {
      for (int64_t piece : {1, 3, 50}) {
        SCOPED_TRACE(::testing::Message() << "count " << count << " unit " << unit << " piece " << piece);
        std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
        std::atomic<int> misaligned{0};
        parallel_ranges(&pool, count, unit, piece, [&](int64_t begin, int64_t end, int) {
          if (begin % unit != 0 || begin >= end || end > count) misaligned.fetch_add(1);
          for (int64_t i = begin; i < end && i < count; ++i) hits[i].fetch_add(1);
        });
        EXPECT_EQ(misaligned.load(), 0);
        for (int64_t i = 0; i < count; ++i) ASSERT_EQ(hits[i].load(), 1) << "item " << i;
      }
    }
  }
}

TEST(ThreadPool, RangesOfAStalledThreadAreTakenOver) {
  // The thread that runs the piece at 0 stalls; the others must take over the rest of its
  // range from the back, and everything is still covered once.
  CpuThreadPool pool(2);
  pool.start();
  for (int round = 0; round < 20; ++round) {
    std::vector<std::atomic<int>> hits(400);
    std::atomic<int> pieces{0};
    parallel_ranges(&pool, 400, 4, 2, [&](int64_t begin, int64_t end, int) {
      pieces.fetch_add(1);
      if (begin == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    EXPECT_GE(pieces.load(), 400 / 8);
  }
}

TEST(ThreadPool, RangesFromSeveralSubmitters) {
  CpuThreadPool pool(3);
  pool.start();
  std::vector<std::thread> submitters;
  std::atomic<int> failures{0};
  for (int s = 0; s < 4; ++s) {
    submitters.emplace_back([&, s] {
      for (int job = 0; job < 100; ++job) {
        const int64_t count = 1 + (job * 7 + s) % 300;
        std::vector<std::atomic<int>> hits(static_cast<size_t>(count));
        parallel_ranges(&pool, count, 4, 3, [&](int64_t begin, int64_t end, int) {
          for (int64_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        for (auto& h : hits)
          if (h.load() != 1) failures.fetch_add(1);
      }
    });
  }
  for (auto& t : submitters) t.join();
  EXPECT_EQ(failures.load(), 0);
}

TEST(ThreadPool, TasksNameTheirParticipant) {
  CpuThreadPool pool(3);
  pool.start();
  for (int job = 0; job < 50; ++job) {
    std::vector<std::atomic<int>> owner(64);
    std::atomic<int> bad{0};
    pool.parallel_for(64, [&](int64_t task, int thread) {
      if (thread < 0 || thread >= 3) bad.fetch_add(1);
      owner[task].store(thread);
    });
    EXPECT_EQ(bad.load(), 0);
  }
  // Two tasks that run at the same time never share a participant index (per-thread scratch
  // relies on it): each task holds its index's slot while it sleeps.
  std::vector<std::atomic<int>> busy(3);
  std::atomic<int> clashes{0};
  pool.parallel_for(12, [&](int64_t, int thread) {
    if (busy[thread].fetch_add(1) != 0) clashes.fetch_add(1);
    std::this_thread::sleep_for(std::chrono::microseconds(300));
    busy[thread].fetch_sub(1);
  });
  EXPECT_EQ(clashes.load(), 0);
}

TEST(ThreadPool, UnstartedPoolRunsOnTheCaller) {
  CpuThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  int ran = 0;
  pool.parallel_for(20, [&](int64_t, int thread) {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    EXPECT_EQ(thread, 0);
    ++ran;
  });
  EXPECT_EQ(ran, 20);
}

}  // namespace
}  // namespace kestrel::cpu::detail
