// The exporter's rewrites for the CPU after partitioning: rope and attention in the
// projections' [B, T, H, Dh] layout (`layout` "bthd", the transposes around attention folded
// into them) and a gated MLP's silu(gate) * up as one silu_mul. The rewritten program must
// compute the original one's bits with every kernel set, instruction set and thread count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "cpu/cpu_test_util.h"
#include "cpu/model_fixture.h"
#include "kestrel/kernels/portable.h"

namespace kestrel::cpu::testing {
namespace {

// Instructions per op of a method, and the layouts its attention and rope calls name.
struct MethodOps {
  std::map<std::string, int> counts;
  std::map<std::string, int> tokens_first;  // op -> calls with layout "bthd"
};
MethodOps method_ops(const program::LoadedProgram& program, const std::string& method) {
  MethodOps ops;
  for (const auto& instruction : program.find_method(method)->instructions)
    if (const auto* call = std::get_if<program::KernelCall>(&instruction)) {
      ++ops.counts[call->op];
      const auto layout = call->attrs.find("layout");
      if (layout != call->attrs.end() && layout->second == program::AttrValue{std::string("bthd")})
        ++ops.tokens_first[call->op];
    }
  return ops;
}

TEST(CpuGraphFusions, FoldTheHeadTransposesAndTheGatedProduct) {
  const auto folded = export_small_model(DType::kF32, 5, 40);
  const auto plain = export_small_model(DType::kF32, 5, 40, {}, DType::kF32, false);
  ASSERT_NE(folded, nullptr);
  ASSERT_NE(plain, nullptr);
  for (const std::string method : {"prefill", "decode"}) {
    SCOPED_TRACE(method);
    const MethodOps before = method_ops(*plain, method), after = method_ops(*folded, method);
    // Two layers, each with q to heads, k to heads, v to heads and the output back: q's and the
    // output's go; q's rope and attention read and write [B, T, H, Dh] instead.
    EXPECT_EQ(before.counts.at("transpose"), 8);
    EXPECT_EQ(after.counts.at("transpose"), 4);
    EXPECT_EQ(after.counts.at("rope"), before.counts.at("rope"));
    EXPECT_EQ(after.counts.at("attention"), 2);
    EXPECT_TRUE(before.tokens_first.empty());
    EXPECT_EQ(after.tokens_first.at("attention"), 2);
    EXPECT_EQ(after.tokens_first.at("rope"), 2);  // q's; k's rope feeds the cache as before
    // silu(gate) * up in each layer.
    EXPECT_EQ(before.counts.at("silu"), 2);
    EXPECT_EQ(before.counts.at("mul"), 2);
    EXPECT_EQ(after.counts.count("silu"), 0u);
    EXPECT_EQ(after.counts.count("mul"), 0u);
    EXPECT_EQ(after.counts.at("silu_mul"), 2);
  }
}

// With f16 caches, k and v reach the cache through a transpose that writes f16 (k's rope
// before it, reading the projection's layout): the casts go.
TEST(CpuGraphFusions, FoldTheCastsToAnF16CacheIntoTheTransposes) {
  const auto folded = export_small_model(DType::kF32, 5, 40, {}, DType::kF16);
  const auto plain = export_small_model(DType::kF32, 5, 40, {}, DType::kF16, false);
  ASSERT_NE(folded, nullptr);
  ASSERT_NE(plain, nullptr);
  for (const std::string method : {"prefill", "decode"}) {
    SCOPED_TRACE(method);
    const MethodOps before = method_ops(*plain, method), after = method_ops(*folded, method);
    EXPECT_EQ(before.counts.at("cast"), 4);  // k and v of two layers
    EXPECT_EQ(after.counts.count("cast"), 0u);
    EXPECT_EQ(before.counts.at("transpose"), 8);
    EXPECT_EQ(after.counts.at("transpose"), 4);  // k's and v's, now writing f16
    EXPECT_EQ(after.tokens_first.at("rope"), 4);  // q's and k's
    EXPECT_EQ(after.tokens_first.at("attention"), 2);
  }
}

std::vector<float> copy(std::span<const float> logits) { return {logits.begin(), logits.end()}; }

// A prompt through prefill chunks (of 13 rows: a full 12-row tile and one more) and the decode
// steps after it: each call's logits.
std::vector<std::vector<float>> generate(llm::HfStaticIOManager& io) {
  const std::vector<int64_t> prompt{1, 17, 42, 99, 3, 150, 7, 88, 123, 5, 61, 199, 12, 77, 31, 8, 140};
  std::vector<std::vector<float>> out;
  auto logits = io.forward(prompt, 0);
  EXPECT_TRUE(logits.ok());
  if (!logits.ok()) return out;
  out.push_back(copy(*logits));
  for (int64_t p = static_cast<int64_t>(prompt.size()); p < 24; ++p) {
    const int64_t token = (p * 37) % 200;
    logits = io.forward(std::span<const int64_t>(&token, 1), p);
    EXPECT_TRUE(logits.ok());
    if (!logits.ok()) return out;
    out.push_back(copy(*logits));
  }
  return out;
}

bool same_bits(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0)
      return false;
  return true;
}

TEST(CpuGraphFusions, TheRewrittenProgramComputesTheBitsOfTheOriginal) {
  for (DType dtype : {DType::kF32, DType::kQ8})
    for (DType cache : {DType::kF32, DType::kF16}) {
      SCOPED_TRACE(::testing::Message() << dtype_name(dtype) << " weights, " << dtype_name(cache) << " caches");
      const auto folded = export_small_model(dtype, 13, 40, {}, cache);
      const auto plain = export_small_model(dtype, 13, 40, {}, cache, false);
      ASSERT_NE(folded, nullptr);
      ASSERT_NE(plain, nullptr);
      std::vector<std::shared_ptr<const runtime::KernelRegistry>> registries{kernels::portable_kernel_registry()};
      for (Isa isa : simd_isas())
        for (int threads : {1, 2}) registries.push_back(registry(threads, isa));
      for (size_t r = 0; r < registries.size(); ++r) {
        SCOPED_TRACE(::testing::Message() << "registry " << r);
        auto folded_io = load_io(folded, registries[r]);
        auto plain_io = load_io(plain, registries[r]);
        ASSERT_NE(folded_io, nullptr);
        ASSERT_NE(plain_io, nullptr);
        const auto want = generate(*plain_io);
        ASSERT_EQ(want.size(), 8u);
        EXPECT_TRUE(same_bits(generate(*folded_io), want));
      }
    }
}

// [B, H, T, Dh] <-> [B, T, H, Dh].
std::vector<float> swap_heads_and_tokens(const std::vector<float>& x, int64_t B, int64_t H, int64_t T, int64_t Dh) {
  std::vector<float> y(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < Dh; ++d) y[((b * T + t) * H + h) * Dh + d] = x[((b * H + h) * T + t) * Dh + d];
  return y;
}

// The optimized attention on q in either layout: the same tasks and arithmetic, so the bits of
// the heads-first call, transposed. Shapes that take every score path: rows of one head in
// blocks (prompt chunks, Dh a multiple of 8 or not), a decode step of several kv heads, and a
// grouped decode step deep in the cache (one head per task, read ahead).
TEST(OptimizedAttention, TokensFirstLayoutGivesTheBitsOfHeadsFirst) {
  struct Case {
    int64_t Hq, Hkv, T, C, Dh, first;
  };
  for (const Case& c : {Case{8, 2, 37, 64, 64, 20}, Case{6, 3, 19, 48, 20, 0}, Case{8, 2, 1, 64, 16, 50},
                        Case{8, 2, 1, 400, 64, 300}, Case{4, 4, 5, 32, 8, 3}})
    for (DType cache : {DType::kF32, DType::kF16}) {
      SCOPED_TRACE(::testing::Message() << "Hq " << c.Hq << ", Hkv " << c.Hkv << ", T " << c.T << ", Dh " << c.Dh
                                        << ", " << dtype_name(cache) << " cache");
      const int64_t B = 1, kv = B * c.Hkv * c.C * c.Dh;
      const auto q_heads = random_floats(static_cast<size_t>(B * c.Hq * c.T * c.Dh), 91);
      auto q = Tensor::from_floats(DType::kF32, {B, c.Hq, c.T, c.Dh}, q_heads);
      auto q_tokens = Tensor::from_floats(DType::kF32, {B, c.T, c.Hq, c.Dh},
                                          swap_heads_and_tokens(q_heads, B, c.Hq, c.T, c.Dh));
      auto k = Tensor::from_floats(cache, {B, c.Hkv, c.C, c.Dh}, random_floats(static_cast<size_t>(kv), 92));
      auto v = Tensor::from_floats(cache, {B, c.Hkv, c.C, c.Dh}, random_floats(static_cast<size_t>(kv), 93));
      std::vector<int64_t> pos(static_cast<size_t>(c.T));
      for (int64_t t = 0; t < c.T; ++t) pos[static_cast<size_t>(t)] = c.first + t;
      auto positions = Tensor::from_ints({c.T}, pos);
      const program::Attrs heads_first{{"scale", 0.3}};
      const program::Attrs tokens_first{{"scale", 0.3}, {"layout", std::string("bthd")}};
      for (Isa isa : simd_isas())
        for (int threads : {1, 2}) {
          SCOPED_TRACE(::testing::Message() << isa_label(isa) << ", " << threads << " threads");
          const auto reg = registry(threads, isa);
          Tensor out(DType::kF32, {B, c.Hq, c.T, c.Dh}), out_tokens(DType::kF32, {B, c.T, c.Hq, c.Dh});
          ASSERT_TRUE(run(*reg, "attention", {q.view(), k.view(), v.view(), positions.view()}, {out.view()},
                          heads_first)
                          .ok());
          const auto status = run(*reg, "attention", {q_tokens.view(), k.view(), v.view(), positions.view()},
                                  {out_tokens.view()}, tokens_first);
          ASSERT_TRUE(status.ok()) << status.error().to_string();
          auto want = Tensor::from_floats(DType::kF32, {B, c.T, c.Hq, c.Dh},
                                          swap_heads_and_tokens(out.floats(), B, c.Hq, c.T, c.Dh));
          EXPECT_TRUE(same_bytes(out_tokens, want));
        }
    }
}

// The optimized transpose that writes f16: the bits of the transpose and the cast apart, with
// values the conversion treats apart (inf, nan, subnormals) and calls split over the pool.
TEST(OptimizedTranspose, ToF16GivesTheBitsOfTransposeThenCast) {
  for (const Shape& dims : {Shape{1, 5, 3, 16}, Shape{1, 300, 8, 64}}) {
    SCOPED_TRACE(dims.to_string());
    auto values = random_floats(static_cast<size_t>(dims.numel()), 97, -70000.0f, 70000.0f);
    values[1] = std::numeric_limits<float>::quiet_NaN();
    values[2] = -std::numeric_limits<float>::infinity();
    values[3] = 3e-8f;
    auto x = Tensor::from_floats(DType::kF32, dims, values);
    const Shape out_dims{dims[0], dims[2], dims[1], dims[3]};
    const program::Attrs perm{{"perm", std::vector<int64_t>{0, 2, 1, 3}}};
    for (Isa isa : simd_isas())
      for (int threads : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << isa_label(isa) << ", " << threads << " threads");
        const auto reg = registry(threads, isa);
        Tensor apart(DType::kF32, out_dims), want(DType::kF16, out_dims), got(DType::kF16, out_dims);
        ASSERT_TRUE(run(*reg, "transpose", {x.view()}, {apart.view()}, perm).ok());
        ASSERT_TRUE(run(*reg, "cast", {apart.view()}, {want.view()}, {{"dtype", std::string("f16")}}).ok());
        const auto status = run(*reg, "transpose", {x.view()}, {got.view()}, perm);
        ASSERT_TRUE(status.ok()) << status.error().to_string();
        EXPECT_TRUE(same_bytes(got, want));
      }
  }
}

// The optimized silu_mul: the optimized silu's values times up, bit for bit, in calls short of
// one vector, with a tail, and large enough to be split over the pool.
TEST(OptimizedSiluMul, GivesTheBitsOfSiluThenMul) {
  for (int64_t n : {int64_t{5}, int64_t{37}, int64_t{40000}}) {
    SCOPED_TRACE(::testing::Message() << n << " values");
    auto gate = Tensor::from_floats(DType::kF32, {n}, random_floats(static_cast<size_t>(n), 95, -9.0f, 9.0f));
    auto up = Tensor::from_floats(DType::kF32, {n}, random_floats(static_cast<size_t>(n), 96, -3.0f, 3.0f));
    const std::vector<double> g = gate.values(), u = up.values();
    std::vector<double> reference(static_cast<size_t>(n));
    for (size_t i = 0; i < reference.size(); ++i) reference[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    for (Isa isa : simd_isas())
      for (int threads : {1, 2}) {
        SCOPED_TRACE(::testing::Message() << isa_label(isa) << ", " << threads << " threads");
        const auto reg = registry(threads, isa);
        Tensor s(DType::kF32, {n}), want(DType::kF32, {n}), got(DType::kF32, {n});
        ASSERT_TRUE(run(*reg, "silu", {gate.view()}, {s.view()}).ok());
        ASSERT_TRUE(run(*reg, "mul", {s.view(), up.view()}, {want.view()}).ok());
        const auto status = run(*reg, "silu_mul", {gate.view(), up.view()}, {got.view()});
        ASSERT_TRUE(status.ok()) << status.error().to_string();
        EXPECT_TRUE(same_bytes(got, want));
        EXPECT_TRUE(all_close(got.values(), reference, 1e-5));
      }
  }
}

}  // namespace
}  // namespace kestrel::cpu::testing
