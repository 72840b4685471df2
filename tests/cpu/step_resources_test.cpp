// A step allocates nothing, starts no thread and does no I/O: kernels get their thread pool and
// scratch through the call context, reserved when the method was loaded. Counted from the very
// first step, prefill and decode, with the optimized kernels on two threads.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cpu/counting_allocator.h"
#include "cpu/cpu_test_util.h"
#include "cpu/model_fixture.h"
#include "kestrel/backends/cpu/cpu_kernels.h"

namespace kestrel::cpu::testing {
namespace {

int threads_in_process() {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

// The process's read and write system calls so far (/proc/self/io: syscr + syscw). Reading it
// costs a fixed number of such calls itself, which calibrate() measures.
int64_t io_syscalls() {
  std::ifstream file("/proc/self/io");
  std::string key;
  int64_t value = 0, total = 0;
  while (file >> key >> value)
    if (key == "syscr:" || key == "syscw:") total += value;
  return total;
}

TEST(StepResources, NoAllocationThreadOrIoInsideAStep) {
  if (!std::filesystem::exists("/proc/self/io")) GTEST_SKIP() << "needs /proc/self/io";
  for (DType dtype : {DType::kF32, DType::kBF16, DType::kQ8}) {
    SCOPED_TRACE(dtype_name(dtype));
    const auto program = export_small_model(dtype, 5, 40);
    ASSERT_NE(program, nullptr);
    CpuKernelOptions options;
    options.threads = 2;
    auto io = load_io(program, optimized_kernel_registry(options));
    ASSERT_NE(io, nullptr);
    io->set_tail_policy(llm::TailPolicy::kDecode);
    // Profiling on (as `kestrel bench --profile` runs): its clock reads allocate nothing either.
    for (runtime::Method* method : io->methods()) method->enable_profiling();
    const std::vector<int64_t> prompt{1, 17, 42, 99, 3, 150, 7};  // one prefill chunk and two decode steps

    const int threads_before = threads_in_process();
    const int64_t a = io_syscalls();
    const int64_t b = io_syscalls();
    const int64_t reading_costs = b - a;
    int64_t allocations = 0;
    {
      CountAllocations count;
      auto first = io->forward(prompt, 0);  // the first steps of this program
      ASSERT_TRUE(first.ok()) << first.error().to_string();
      const int64_t next_token = 5;
      auto decode = io->forward(std::span<const int64_t>(&next_token, 1), static_cast<int64_t>(prompt.size()));
      ASSERT_TRUE(decode.ok());
      allocations = count.count();
    }
    const int64_t c = io_syscalls();  // (outside the counted scope: reading the file allocates)
    EXPECT_EQ(allocations, 0);
    EXPECT_EQ(c - b, reading_costs) << "read/write system calls during the steps";
    EXPECT_EQ(threads_in_process(), threads_before);
    EXPECT_EQ(io->prefill_calls(), 1);
    EXPECT_EQ(io->decode_calls(), 3);
    for (runtime::Method* method : io->methods())
      for (const auto& row : method->profile()) EXPECT_EQ(row.calls, method->name() == "prefill" ? 1 : 3) << row.op;
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
