#include <gtest/gtest.h>

#include <cstring>

#include "kestrel/export/constant_table.h"

namespace kestrel::exporter {
namespace {

std::shared_ptr<const ConstantData> float_data(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return ConstantData::owned(std::move(bytes));
}

std::vector<float> as_floats(const ConstantData& data) {
  std::vector<float> out(data.held_bytes().size() / sizeof(float));
  std::memcpy(out.data(), data.held_bytes().data(), data.held_bytes().size());
  return out;
}

// A rope table of `positions` rows, as an exporter would fold it.
std::vector<float> rope_table(int positions, float base) {
  std::vector<float> values;
  for (int p = 0; p < positions; ++p)
    for (int i = 0; i < 2; ++i) values.push_back(base + static_cast<float>(p * 2 + i));
  return values;
}

// A method graph: tokens, a shared weight, and one folded rope table named the way a
// per-method lifting pass names it.
Graph method_graph(int positions, float base, const std::shared_ptr<const ConstantData>& weight) {
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {1, 2}, InputKind::kUser);
  ValueId w = g.add_input("embed.weight", DType::kF32, {2, 2}, InputKind::kParameter, weight);
  ValueId cos = g.add_input("_lifted_constant_0", DType::kF32, {positions, 2}, InputKind::kConstant,
                            float_data(rope_table(positions, base)));
  ValueId h = g.add_op("linear", {x, w}, "h", DType::kF32, {1, 2});
  g.mark_output(g.add_op("mul", {h, cos}, "y", DType::kF32, {1, 2}));
  return g;
}

TEST(ConstantTable, TwoMethodsWithSameNamedDifferentConstantsGetDistinctNames) {
  auto weight = float_data({1, 2, 3, 4});
  Graph prefill = method_graph(16, 0.0f, weight);
  Graph decode = method_graph(4, 100.0f, weight);
  ConstantTable table;
  ASSERT_TRUE(lift_constants(prefill, table).ok());
  ASSERT_TRUE(lift_constants(decode, table).ok());

  const std::string& prefill_name = prefill.value(2).name;
  const std::string& decode_name = decode.value(2).name;
  EXPECT_NE(prefill_name, decode_name);
  EXPECT_EQ(prefill_name.rfind("_lifted_constant_", 0), 0u);
  EXPECT_EQ(decode_name.rfind("_lifted_constant_", 0), 0u);

  // Both rope tables exist, each with its own data; the weight is shared once.
  ASSERT_EQ(table.entries().size(), 3u);
  const ConstantEntry* p = table.find(prefill_name);
  const ConstantEntry* d = table.find(decode_name);
  ASSERT_NE(p, nullptr);
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(p->shape, (std::vector<int64_t>{16, 2}));
  EXPECT_EQ(d->shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(as_floats(*p->data), rope_table(16, 0.0f));
  EXPECT_EQ(as_floats(*d->data), rope_table(4, 100.0f));
  EXPECT_TRUE(p->lifted);
  const ConstantEntry* w = table.find("embed.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_FALSE(w->lifted);
  EXPECT_EQ(prefill.value(1).name, "embed.weight");
  EXPECT_EQ(decode.value(1).name, "embed.weight");
  EXPECT_TRUE(prefill.validate().ok());
  EXPECT_TRUE(decode.validate().ok());
}

TEST(ConstantTable, LiftingTwiceNeverReusesAName) {
  ConstantTable table;
  std::set<std::string> names;
  for (int round = 0; round < 3; ++round) {
    Graph g = method_graph(4, static_cast<float>(round), float_data({1, 2, 3, 4}));
    ASSERT_TRUE(lift_constants(g, table).ok());
    EXPECT_TRUE(names.insert(g.value(2).name).second) << g.value(2).name << " reused";
    // Lifting the same (already lifted) graph again makes yet another name.
    ASSERT_TRUE(lift_constants(g, table).ok());
    EXPECT_TRUE(names.insert(g.value(2).name).second) << g.value(2).name << " reused";
  }
  EXPECT_EQ(names.size(), 6u);
}

TEST(ConstantTable, NextNameIsOnePastTheLargestSuffix) {
  ConstantTable table;
  auto data = float_data({1});
  EXPECT_EQ(table.lift("_lifted_constant", DType::kF32, {1}, data), "_lifted_constant_0");
  EXPECT_EQ(table.lift("_lifted_constant", DType::kF32, {1}, data), "_lifted_constant_1");
  ASSERT_TRUE(table.add_parameter("_lifted_constant_7", DType::kF32, {1}, data).ok());
  EXPECT_EQ(table.lift("_lifted_constant", DType::kF32, {1}, data), "_lifted_constant_8");
  table.reserve("_lifted_constant_20");
  EXPECT_TRUE(table.contains("_lifted_constant_20"));
  EXPECT_EQ(table.find("_lifted_constant_20"), nullptr);  // reserved, not an entry
  EXPECT_EQ(table.lift("_lifted_constant", DType::kF32, {1}, data), "_lifted_constant_21");
  // Other prefixes and non-numeric suffixes do not count.
  table.reserve("_lifted_constant_x99");
  table.reserve("_lifted_constant_99_b");
  table.reserve("_lifted_constants_500");
  EXPECT_EQ(table.lift("_lifted_constant", DType::kF32, {1}, data), "_lifted_constant_22");
  EXPECT_EQ(table.lift("mask", DType::kF32, {1}, data), "mask_0");

  // Through lift_constants: a table that already has _lifted_constant_7 gives _8.
  ConstantTable seeded;
  ASSERT_TRUE(seeded.add_parameter("_lifted_constant_7", DType::kF32, {1}, data).ok());
  Graph g = method_graph(2, 0.0f, float_data({1, 2, 3, 4}));
  ASSERT_TRUE(lift_constants(g, seeded).ok());
  EXPECT_EQ(g.value(2).name, "_lifted_constant_8");
}

TEST(ConstantTable, FreshNamesAvoidOtherValuesOfTheGraph) {
  ConstantTable table;
  Graph g;
  ValueId x = g.add_input("_lifted_constant_3", DType::kF32, {1}, InputKind::kUser);  // a user input
  ValueId c = g.add_input("folded", DType::kF32, {1}, InputKind::kConstant, float_data({5}));
  g.mark_output(g.add_op("add", {x, c}, "y", DType::kF32, {1}));
  ASSERT_TRUE(lift_constants(g, table).ok());
  EXPECT_EQ(g.value(c).name, "_lifted_constant_4");
  EXPECT_EQ(table.entries().size(), 1u);
}

TEST(ConstantTable, ParametersAreSharedByNameAndClashesAreErrors) {
  ConstantTable table;
  auto a = float_data({1, 2});
  auto same_bytes = float_data({1, 2});
  auto other = float_data({1, 3});
  ASSERT_TRUE(table.add_parameter("w", DType::kF32, {2}, a).ok());
  auto shared = table.add_parameter("w", DType::kF32, {2}, same_bytes);
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(*shared, "w");
  EXPECT_EQ(table.entries().size(), 1u);

  auto bytes_clash = table.add_parameter("w", DType::kF32, {2}, other);
  ASSERT_FALSE(bytes_clash.ok());
  EXPECT_NE(bytes_clash.error().message().find("'w'"), std::string::npos);
  auto shape_clash = table.add_parameter("w", DType::kF32, {1, 2}, a);
  ASSERT_FALSE(shape_clash.ok());
  EXPECT_NE(shape_clash.error().message().find("'w'"), std::string::npos);
  EXPECT_FALSE(table.add_parameter("v", DType::kF32, {3}, a).ok());  // 8 bytes for 3 floats
  EXPECT_FALSE(table.add_parameter("u", DType::kF32, {2}, nullptr).ok());

  // Through lift_constants the clash names the parameter.
  Graph g;
  ValueId x = g.add_input("x", DType::kF32, {2}, InputKind::kUser);
  ValueId w = g.add_input("w", DType::kF32, {2}, InputKind::kParameter, other);
  g.mark_output(g.add_op("add", {x, w}, "y", DType::kF32, {2}));
  auto status = lift_constants(g, table);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("'w'"), std::string::npos);
}

TEST(ConstantTable, ConstantWithoutDataIsAnError) {
  ConstantTable table;
  Graph g;
  ValueId c = g.add_input("c", DType::kF32, {1}, InputKind::kConstant);
  g.mark_output(g.add_op("silu", {c}, "y", DType::kF32, {1}));
  auto status = lift_constants(g, table);
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("'c'"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::exporter
