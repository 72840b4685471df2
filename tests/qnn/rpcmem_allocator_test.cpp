#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <map>
#include <vector>

#include "kestrel/backends/qnn/mem_registrar.h"
#include "kestrel/backends/qnn/rpcmem_allocator.h"
#include "kestrel/core/log.h"
#include "qnn/cdsprpc_shim_counters.h"

#ifndef KESTREL_CDSPRPC_SHIM
#error "tests/shims/CMakeLists.txt passes the shim paths"
#endif

namespace kestrel::qnn {
namespace {

class RecordingRegistrar final : public QnnMemRegistrar {
 public:
  std::map<std::string, std::vector<QnnContextId>> contexts;  // method -> contexts
  struct Call {
    QnnContextId context;
    QnnMemRegion region;
    QnnMemHandle handle;
  };
  std::vector<Call> registered;
  std::vector<std::pair<QnnContextId, QnnMemHandle>> deregistered;
  bool fail = false;

  Result<std::vector<QnnContextId>> contexts_for(const std::string& method, size_t, bool) override {
    auto it = contexts.find(method);
    if (it == contexts.end()) return std::vector<QnnContextId>{};
    return it->second;
  }
  Result<QnnMemHandle> register_memory(QnnContextId context, const QnnMemRegion& region) override {
    if (fail) return Error(ErrorCode::kUnavailable, "QnnMem_register refused");
    const QnnMemHandle handle = 1000 + registered.size();
    registered.push_back({context, region, handle});
    return handle;
  }
  void deregister_memory(QnnContextId context, QnnMemHandle handle) override {
    deregistered.emplace_back(context, handle);
  }
};

runtime::TensorInfo info(const std::string& name, size_t bytes) {
  runtime::TensorInfo i;
  i.name = name;
  i.dtype = DType::kF32;
  i.shape = Shape{static_cast<int64_t>(bytes / 4)};
  i.nbytes = bytes;
  return i;
}

RpcmemOptions shim_options(const char* path = KESTREL_CDSPRPC_SHIM,
                           std::shared_ptr<QnnMemRegistrar> registrar = nullptr) {
  RpcmemOptions o;
  o.library_path = path;
  o.registrar = std::move(registrar);
  return o;
}

class RpcmemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("CDSPRPC_SHIM_FAIL");
    unsetenv("CDSPRPC_SHIM_ALIGNED");
    set_log_level(LogLevel::kWarn);
  }
  void TearDown() override {
    unsetenv("CDSPRPC_SHIM_FAIL");
    unsetenv("CDSPRPC_SHIM_ALIGNED");
    set_qnn_mem_registrar(nullptr);
  }
};

TEST_F(RpcmemTest, AlignsAndPassesSystemHeapAndDefaultFlags) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  {
    RpcmemAllocator allocator(shim_options());
    ASSERT_TRUE(allocator.available()) << allocator.unavailable_reason();
    EXPECT_TRUE(allocator.uses_alloc2());
    EXPECT_EQ(allocator.alignment(), 4096u);
    EXPECT_EQ(allocator.name(), "rpcmem");
    void* p = allocator.allocate(10000, info("k_cache_0", 10000));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
    EXPECT_EQ(shim.counters().last_heap_id, 25);
    EXPECT_EQ(shim.counters().last_flags, 1u);
    EXPECT_EQ(shim.counters().heap_id_mismatches, 0);
    EXPECT_EQ(shim.counters().flags_mismatches, 0);
    // The shim's base is 64 bytes past a page: the allocator padded and recorded the offset.
    auto region = allocator.resolve(p);
    ASSERT_TRUE(region.has_value());
    EXPECT_GE(region->fd, 100);
    EXPECT_EQ(region->address, p);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(region->base) + region->offset, reinterpret_cast<uintptr_t>(p));
    EXPECT_GE(region->total, region->offset + 10000);
    EXPECT_EQ(region->bytes, 10000u);
    EXPECT_EQ(region->info.name, "k_cache_0");
    // Any pointer inside resolves to the same allocation, offset from its base.
    auto inner = allocator.resolve(static_cast<char*>(p) + 4000);
    ASSERT_TRUE(inner.has_value());
    EXPECT_EQ(inner->fd, region->fd);
    EXPECT_EQ(inner->offset, region->offset + 4000);
    EXPECT_EQ(inner->bytes, 6000u);
    EXPECT_FALSE(allocator.resolve(static_cast<char*>(p) + 10000).has_value());
    std::memset(p, 0xab, 10000);
    allocator.free(p);
    EXPECT_EQ(allocator.live_allocations(), 0u);
  }
  EXPECT_EQ(shim.counters().live, 0);
  EXPECT_EQ(shim.counters().bad_frees, 0) << "the raw base is what gets freed";
}

TEST_F(RpcmemTest, PageAlignedBasesNeedNoPadding) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  setenv("CDSPRPC_SHIM_ALIGNED", "1", 1);
  RpcmemAllocator allocator(shim_options());
  void* p = allocator.allocate(5000, info("x", 5000));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(shim.counters().alloc2_calls, 1);
  EXPECT_EQ(shim.counters().last_size, 8192u);
  EXPECT_EQ(allocator.resolve(p)->offset, 0u);
  allocator.free(p);
  EXPECT_EQ(shim.counters().live, 0);
}

TEST_F(RpcmemTest, SmallerAlignmentIsHonoured) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  RpcmemOptions o = shim_options();
  o.alignment = 64;
  RpcmemAllocator allocator(o);
  EXPECT_EQ(allocator.alignment(), 64u);
  void* p = allocator.allocate(100, info("x", 100));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
  EXPECT_EQ(shim.counters().alloc2_calls, 1) << "a 64-aligned base needs no second try";
  allocator.free(p);
  RpcmemOptions bad = shim_options();
  bad.alignment = 3000;
  RpcmemAllocator unusable(bad);
  EXPECT_FALSE(unusable.available());
  EXPECT_EQ(unusable.allocate(100, info("x", 100)), nullptr);
}

TEST_F(RpcmemTest, PrefillAndDecodeSharingABufferRegisterOncePerContext) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  auto registrar = std::make_shared<RecordingRegistrar>();
  registrar->contexts = {{"prefill", {7}}, {"decode", {7}}, {"portable_only", {}}};
  {
    RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM, registrar));
    void* cache = allocator.allocate(8192, info("k_cache_0", 8192));
    void* logits = allocator.allocate(4096, info("logits", 4096));
    ASSERT_NE(cache, nullptr);
    ASSERT_NE(logits, nullptr);
    ASSERT_TRUE(allocator.bind(cache, "prefill", 2, true).ok());
    ASSERT_TRUE(allocator.bind(cache, "decode", 2, true).ok());
    ASSERT_TRUE(allocator.bind(cache, "decode", 2, true).ok());
    ASSERT_TRUE(allocator.bind(logits, "prefill", 0, false).ok());
    ASSERT_TRUE(allocator.bind(logits, "portable_only", 0, false).ok());
    ASSERT_EQ(registrar->registered.size(), 2u) << "one per (context, address)";
    EXPECT_EQ(allocator.live_registrations(), 2u);
    const auto& reg = registrar->registered[0];
    EXPECT_EQ(reg.context, 7u);
    EXPECT_EQ(reg.region.address, cache);
    EXPECT_EQ(reg.region.fd, allocator.resolve(cache)->fd);
    EXPECT_EQ(reg.region.offset, allocator.resolve(cache)->offset);
    EXPECT_EQ(reg.region.info.name, "k_cache_0");

    // Deregistered on free, exactly once each.
    allocator.free(cache);
    ASSERT_EQ(registrar->deregistered.size(), 1u);
    EXPECT_EQ(registrar->deregistered[0], std::make_pair(QnnContextId{7}, registrar->registered[0].handle));

    // A second program load (new contexts) in the same process registers again.
    registrar->contexts = {{"prefill", {8}}, {"decode", {8}}};
    void* cache2 = allocator.allocate(8192, info("k_cache_0", 8192));
    ASSERT_TRUE(allocator.bind(cache2, "prefill", 2, true).ok());
    ASSERT_TRUE(allocator.bind(cache2, "decode", 2, true).ok());
    ASSERT_TRUE(allocator.bind(logits, "prefill", 0, false).ok());
    EXPECT_EQ(registrar->registered.size(), 4u);
    EXPECT_EQ(registrar->registered[2].context, 8u);
  }
  // The allocator's destructor freed and deregistered what was left.
  EXPECT_EQ(registrar->deregistered.size(), registrar->registered.size());
  EXPECT_EQ(shim.counters().live, 0);
  EXPECT_EQ(shim.counters().bad_frees, 0);
}

TEST_F(RpcmemTest, SeparateContextsEachRegister) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  auto registrar = std::make_shared<RecordingRegistrar>();
  registrar->contexts = {{"prefill", {1}}, {"decode", {2}}};
  RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM, registrar));
  void* cache = allocator.allocate(4096, info("v_cache_0", 4096));
  ASSERT_TRUE(allocator.bind(cache, "prefill", 3, true).ok());
  ASSERT_TRUE(allocator.bind(cache, "decode", 3, true).ok());
  EXPECT_EQ(registrar->registered.size(), 2u);
  // A view inside the allocation registers at its own address with fd + offset.
  char* half = static_cast<char*>(cache) + 2048;
  ASSERT_TRUE(allocator.bind(half, "prefill", 4, true).ok());
  ASSERT_EQ(registrar->registered.size(), 3u);
  EXPECT_EQ(registrar->registered[2].region.offset, allocator.resolve(cache)->offset + 2048);
  EXPECT_EQ(registrar->registered[2].region.bytes, 2048u);
  allocator.free(cache);
  EXPECT_EQ(registrar->deregistered.size(), 3u);
}

TEST_F(RpcmemTest, RegistrationErrorsAreReturned) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  auto registrar = std::make_shared<RecordingRegistrar>();
  registrar->contexts = {{"prefill", {1}}};
  registrar->fail = true;
  RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM, registrar));
  void* p = allocator.allocate(4096, info("tokens", 4096));
  Status status = allocator.bind(p, "prefill", 0, true);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("tokens"), std::string::npos);
  EXPECT_NE(status.error().message().find("QnnMem_register refused"), std::string::npos);
  allocator.free(p);
}

TEST_F(RpcmemTest, ForeignPointersAreNotRegisteredOrFreed) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  auto registrar = std::make_shared<RecordingRegistrar>();
  registrar->contexts = {{"prefill", {1}}};
  RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM, registrar));
  std::vector<float> heap(16);
  EXPECT_TRUE(allocator.bind(heap.data(), "prefill", 0, true).ok());
  EXPECT_TRUE(registrar->registered.empty());
  allocator.free(heap.data());
  EXPECT_EQ(shim.counters().free_calls, 0);
}

TEST_F(RpcmemTest, ProcessWideRegistrarIsUsedWhenNoneIsGiven) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  auto registrar = std::make_shared<RecordingRegistrar>();
  registrar->contexts = {{"decode", {3}}};
  RpcmemAllocator allocator(shim_options());
  void* p = allocator.allocate(4096, info("x", 4096));
  EXPECT_TRUE(allocator.bind(p, "decode", 0, true).ok()) << "no registrar: nothing to register";
  set_qnn_mem_registrar(registrar);
  EXPECT_TRUE(allocator.bind(p, "decode", 0, true).ok());
  EXPECT_EQ(registrar->registered.size(), 1u);
  allocator.free(p);
  EXPECT_EQ(registrar->deregistered.size(), 1u);
}

TEST_F(RpcmemTest, EveryAllocationIsFreed) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  {
    RpcmemAllocator allocator(shim_options());
    std::vector<void*> buffers;
    for (int i = 0; i < 10; ++i) buffers.push_back(allocator.allocate(1000 * (i + 1), info("b", 1000 * (i + 1))));
    for (void* b : buffers) ASSERT_NE(b, nullptr);
    EXPECT_EQ(shim.counters().live, 10);
    for (int i = 0; i < 5; ++i) allocator.free(buffers[i]);
    EXPECT_EQ(shim.counters().live, 5);
    EXPECT_EQ(allocator.live_allocations(), 5u);
  }
  EXPECT_EQ(shim.counters().live, 0);
  EXPECT_EQ(shim.counters().bad_frees, 0);
  EXPECT_EQ(shim.counters().alloc2_calls, shim.counters().free_calls);
}

TEST_F(RpcmemTest, LegacyIntSizeApiRefusesOverIntMax) {
  Shim shim(KESTREL_CDSPRPC_SHIM_LEGACY);
  RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM_LEGACY));
  ASSERT_TRUE(allocator.available()) << allocator.unavailable_reason();
  EXPECT_FALSE(allocator.uses_alloc2());
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(allocator.allocate(static_cast<size_t>(INT_MAX) + 1, info("huge", 0)), nullptr);
  // Rounding up to the alignment would pass INT_MAX too: refused, not truncated.
  EXPECT_EQ(allocator.allocate(static_cast<size_t>(INT_MAX) - 10, info("huge", 0)), nullptr);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(shim.counters().alloc_calls, 0) << "never called with a truncated size";
  EXPECT_NE(log.find("INT_MAX"), std::string::npos) << log;
  void* p = allocator.allocate(4096, info("small", 4096));
  ASSERT_NE(p, nullptr);
  EXPECT_GE(shim.counters().alloc_calls, 1);
  EXPECT_EQ(shim.counters().last_heap_id, 25);
  EXPECT_EQ(shim.counters().last_flags, 1u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 4096, 0u);
  allocator.free(p);
  EXPECT_EQ(shim.counters().live, 0);
}

TEST_F(RpcmemTest, MissingLibraryFallsBackAndLogsOnce) {
  RpcmemAllocator allocator(shim_options("/nonexistent/libcdsprpc.so"));
  EXPECT_FALSE(allocator.available());
  EXPECT_NE(allocator.unavailable_reason().find("/nonexistent/libcdsprpc.so"), std::string::npos);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(allocator.allocate(4096, info("a", 4096)), nullptr);
  EXPECT_EQ(allocator.allocate(4096, info("b", 4096)), nullptr);
  const std::string log = ::testing::internal::GetCapturedStderr();
  size_t count = 0;
  for (size_t at = log.find("heap"); at != std::string::npos; at = log.find("heap", at + 1)) ++count;
  EXPECT_EQ(count, 1u) << log;
  EXPECT_NE(log.find("libcdsprpc"), std::string::npos) << log;
  EXPECT_TRUE(allocator.bind(nullptr, "prefill", 0, true).ok());
}

TEST_F(RpcmemTest, MissingSymbolFallsBack) {
  RpcmemAllocator allocator(shim_options(KESTREL_CDSPRPC_SHIM_BROKEN));
  EXPECT_FALSE(allocator.available());
  EXPECT_NE(allocator.unavailable_reason().find("rpcmem_to_fd"), std::string::npos) << allocator.unavailable_reason();
  EXPECT_EQ(allocator.allocate(4096, info("a", 4096)), nullptr);
}

TEST_F(RpcmemTest, FailedAllocationFallsBack) {
  Shim shim(KESTREL_CDSPRPC_SHIM);
  RpcmemAllocator allocator(shim_options());
  setenv("CDSPRPC_SHIM_FAIL", "1", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(allocator.allocate(4096, info("k_cache_0", 4096)), nullptr);
  EXPECT_EQ(allocator.allocate(4096, info("k_cache_1", 4096)), nullptr);
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("k_cache_0"), std::string::npos) << log;
  EXPECT_EQ(log.find("k_cache_1"), std::string::npos) << "logged once: " << log;
  EXPECT_EQ(shim.counters().failed_allocs, 2);
  unsetenv("CDSPRPC_SHIM_FAIL");
  void* p = allocator.allocate(4096, info("k_cache_2", 4096));
  EXPECT_NE(p, nullptr) << "recovers when the library does";
  allocator.free(p);
  EXPECT_EQ(shim.counters().live, 0);
}

TEST_F(RpcmemTest, LibraryPathFromEnvironment) {
  setenv(kCdsprpcLibraryEnv, KESTREL_CDSPRPC_SHIM, 1);
  {
    RpcmemAllocator allocator;
    EXPECT_EQ(allocator.library_path(), KESTREL_CDSPRPC_SHIM);
    EXPECT_TRUE(allocator.available()) << allocator.unavailable_reason();
  }
  unsetenv(kCdsprpcLibraryEnv);
  RpcmemAllocator fallback;
  EXPECT_EQ(fallback.library_path(), "libcdsprpc.so");
}

TEST_F(RpcmemTest, RegisteredWithTheRuntime) {
  register_qnn_allocators();
  auto names = runtime::buffer_allocator_names();
  EXPECT_NE(std::find(names.begin(), names.end(), "rpcmem"), names.end());
  setenv(kCdsprpcLibraryEnv, KESTREL_CDSPRPC_SHIM, 1);
  auto allocator = runtime::make_buffer_allocator("rpcmem");
  unsetenv(kCdsprpcLibraryEnv);
  ASSERT_TRUE(allocator.ok()) << allocator.error().to_string();
  EXPECT_EQ((*allocator)->name(), "rpcmem");
  EXPECT_EQ((*allocator)->alignment(), 4096u);
  void* p = (*allocator)->allocate(100, info("x", 100));
  ASSERT_NE(p, nullptr);
  (*allocator)->free(p);
}

}  // namespace
}  // namespace kestrel::qnn
