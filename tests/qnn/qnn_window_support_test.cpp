// Sliding-window attention and partial rotary are not in the QNN lowering: such nodes stay on
// the portable kernels (plain attention and full rotary are still delegated).
#include <gtest/gtest.h>

#include "kestrel/backends/qnn/op_support.h"
#include "qnn/qnn_test_graphs.h"

namespace kestrel::qnn {
namespace {

using exporter::Graph;
using exporter::InputKind;

TEST(QnnOpSupport, WindowedAttentionAndPartialRotaryStayPortable) {
  Graph g;
  auto q = g.add_input("q", DType::kF32, {1, 2, 4, 16}, InputKind::kUser);
  auto k = g.add_input("k", DType::kF32, {1, 2, 16, 16}, InputKind::kUser);
  auto pos = g.add_input("pos", DType::kI64, {4}, InputKind::kUser);
  auto full_cs = g.add_input("cs", DType::kF32, {16, 8}, InputKind::kConstant, testing::filled(DType::kF32, {16, 8}, 1));
  auto part_cs = g.add_input("ps", DType::kF32, {16, 6}, InputKind::kConstant, testing::filled(DType::kF32, {16, 6}, 1));
  auto plain = g.add_op("attention", {q, k, k, pos}, "plain", DType::kF32, {1, 2, 4, 16}, {{"scale", 0.25}});
  auto windowed = g.add_op("attention", {q, k, k, pos}, "windowed", DType::kF32, {1, 2, 4, 16},
                           {{"scale", 0.25}, {"window", int64_t{8}}});
  const std::string half = "half";
  auto rope = g.add_op("rope", {q, pos, full_cs, full_cs}, "rope", DType::kF32, {1, 2, 4, 16}, {{"style", half}});
  auto partial = g.add_op("rope", {q, pos, part_cs, part_cs}, "partial", DType::kF32, {1, 2, 4, 16},
                          {{"style", half}, {"rotary_dim", int64_t{12}}});
  for (auto v : {plain, windowed, rope, partial}) g.mark_output(v);
  auto check = [&](exporter::ValueId out) { return check_qnn_node(g, *g.find_node(g.value(out).producer)); };
  EXPECT_TRUE(check(plain).ok());
  EXPECT_TRUE(check(rope).ok());
  const Status window_status = check(windowed);
  ASSERT_FALSE(window_status.ok());
  EXPECT_NE(window_status.error().message().find("sliding window"), std::string::npos);
  const Status partial_status = check(partial);
  ASSERT_FALSE(partial_status.ok());
  EXPECT_NE(partial_status.error().message().find("partial rotary"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::qnn
