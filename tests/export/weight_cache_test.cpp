// WeightCache: every weight is a recipe run while it is written, a chunk of rows at a time. Its
// bytes equal an independent conversion of the checkpoint tensor for every chunk size, target
// dtype, row slice and (1 + w) fold; errors come when the constant is asked for, not when written.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "export/conversion_reference.h"
#include "export/scratch_dir.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/weight_cache.h"
#include "kestrel/fixtures/checkpoint_writer.h"

namespace kestrel::exporter {
namespace {

using testing::expect_q8_of;
using testing::expected_conversion;
using testing::ScratchDir;

Checkpoint fixture_checkpoint(const ScratchDir& dir, const std::string& architecture, DType dtype) {
  fixtures::FixtureConfig fixture;
  fixture.architecture = architecture;
  fixture.dtype = dtype;
  const std::string path = dir / fmt::format("{}-{}", architecture, dtype_name(dtype));
  auto written = fixtures::write_hf_checkpoint(path, fixture);
  EXPECT_TRUE(written.ok()) << written.error().to_string();
  auto checkpoint = load_checkpoint(path);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  return std::move(checkpoint).value();
}

std::vector<uint8_t> bytes_of(const std::shared_ptr<const ConstantData>& data) {
  EXPECT_FALSE(data->is_held()) << "weights are produced while they are written";
  auto bytes = data->read_all();
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  EXPECT_EQ(bytes.ok() ? bytes->size() : 0, data->size());
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// Chunk sizes: one row per chunk, an odd size that splits rows unevenly, one chunk for all.
constexpr size_t kChunkSizes[] = {1, 200, WeightCache::kDefaultChunkBytes};

TEST(WeightCache, FloatConversionsMatchTheCheckpointForEveryChunkSize) {
  ScratchDir dir;
  for (DType source : {DType::kBF16, DType::kF32, DType::kF16}) {
    const Checkpoint checkpoint = fixture_checkpoint(dir, "LlamaForCausalLM", source);
    for (size_t chunk : kChunkSizes) {
      for (DType target : {DType::kF32, DType::kF16, DType::kBF16}) {
        WeightCache weights(checkpoint, target, chunk);
        for (const char* name : {"model.embed_tokens.weight", "model.layers.1.mlp.down_proj.weight",
                                 "model.layers.0.input_layernorm.weight"}) {
          SCOPED_TRACE(fmt::format("{} {} -> {}, chunk {}", name, dtype_name(source), dtype_name(target), chunk));
          auto tensor = checkpoint.tensor(name);
          ASSERT_TRUE(tensor.ok());
          auto data = weights.get(name, target);
          ASSERT_TRUE(data.ok()) << data.error().to_string();
          EXPECT_EQ(bytes_of(*data), expected_conversion(tensor->bytes, source, target));
        }
      }
    }
  }
}

TEST(WeightCache, Q8MatchesTheDefinitionForEveryChunkSize) {
  ScratchDir dir;
  for (DType source : {DType::kBF16, DType::kF32}) {
    const Checkpoint checkpoint = fixture_checkpoint(dir, "LlamaForCausalLM", source);
    for (size_t chunk : kChunkSizes) {
      WeightCache weights(checkpoint, DType::kQ8, chunk);
      for (const char* name : {"model.embed_tokens.weight", "model.layers.0.self_attn.k_proj.weight"}) {
        auto tensor = checkpoint.tensor(name);
        ASSERT_TRUE(tensor.ok());
        auto data = weights.get(name, DType::kQ8);
        ASSERT_TRUE(data.ok()) << data.error().to_string();
        expect_q8_of(bytes_of(*data), tensor->bytes, source, tensor->shape[0], tensor->shape[1],
                     fmt::format("{} from {}, chunk {}", name, dtype_name(source), chunk));
      }
    }
  }
}

TEST(WeightCache, RowsOfAFusedProjection) {
  ScratchDir dir;
  const Checkpoint checkpoint = fixture_checkpoint(dir, "Phi3ForCausalLM", DType::kBF16);
  const std::string fused = "model.layers.0.self_attn.qkv_proj.weight";
  auto tensor = checkpoint.tensor(fused);
  ASSERT_TRUE(tensor.ok());
  const int64_t rows = tensor->shape[0], cols = tensor->shape[1];
  const size_t row_bytes = static_cast<size_t>(cols) * 2;
  for (size_t chunk : kChunkSizes) {
    WeightCache weights(checkpoint, DType::kF32, chunk);
    for (auto [begin, count] : {std::pair<int64_t, int64_t>{0, 64}, {64, 32}, {96, rows - 96}}) {
      SCOPED_TRACE(fmt::format("rows [{}, {}), chunk {}", begin, begin + count, chunk));
      auto data = weights.get_rows(fused, begin, count, DType::kF32);
      ASSERT_TRUE(data.ok()) << data.error().to_string();
      const auto slice = tensor->bytes.subspan(static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(count) * row_bytes);
      EXPECT_EQ(bytes_of(*data), expected_conversion(slice, DType::kBF16, DType::kF32));
    }
    auto q8 = WeightCache(checkpoint, DType::kQ8, chunk).get_rows(fused, 64, 32, DType::kQ8);
    ASSERT_TRUE(q8.ok()) << q8.error().to_string();
    expect_q8_of(bytes_of(*q8), tensor->bytes.subspan(64 * row_bytes, 32 * row_bytes), DType::kBF16, 32, cols,
                 "qkv rows [64, 96) in q8");
  }
  WeightCache weights(checkpoint, DType::kF32);
  auto outside = weights.get_rows(fused, rows - 8, 16, DType::kF32);
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message().find("are outside its first dimension"), std::string::npos);
}

TEST(WeightCache, PlusOneNormsAreFoldedInF32) {
  ScratchDir dir;
  const Checkpoint checkpoint = fixture_checkpoint(dir, "Gemma3ForCausalLM", DType::kBF16);
  const std::string name = "model.layers.0.input_layernorm.weight";
  auto tensor = checkpoint.tensor(name);
  ASSERT_TRUE(tensor.ok());
  for (size_t chunk : kChunkSizes) {
    WeightCache weights(checkpoint, DType::kQ8, chunk);
    auto folded = weights.get_norm(name, true);
    ASSERT_TRUE(folded.ok()) << folded.error().to_string();
    EXPECT_EQ(bytes_of(*folded), expected_conversion(tensor->bytes, DType::kBF16, DType::kF32, 1.0f));
    auto plain = weights.get_norm(name, false);
    ASSERT_TRUE(plain.ok());
    EXPECT_EQ(bytes_of(*plain), expected_conversion(tensor->bytes, DType::kBF16, DType::kF32));
  }
}

TEST(WeightCache, OneObjectPerWeightAndTheCheckpointIsUnchanged) {
  ScratchDir dir;
  const Checkpoint checkpoint = fixture_checkpoint(dir, "LlamaForCausalLM", DType::kBF16);
  const std::string name = "model.embed_tokens.weight";
  auto tensor = checkpoint.tensor(name);
  ASSERT_TRUE(tensor.ok());
  const std::vector<uint8_t> before(tensor->bytes.begin(), tensor->bytes.end());
  WeightCache weights(checkpoint, DType::kBF16, 1);
  auto first = weights.get(name, DType::kBF16);
  auto second = weights.get(name, DType::kBF16);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(first->get(), second->get()) << "prefill and decode share one constant";
  EXPECT_EQ(bytes_of(*first), before);
  EXPECT_EQ(bytes_of(*first), before) << "a recipe can run again";
  // Writing released the pages it read; the mapped bytes are the file's still.
  EXPECT_EQ(std::vector<uint8_t>(tensor->bytes.begin(), tensor->bytes.end()), before);
}

TEST(WeightCache, ImpossibleConversionsFailWhenAskedFor) {
  ScratchDir dir;
  const Checkpoint checkpoint = fixture_checkpoint(dir, "LlamaForCausalLM", DType::kF32);
  WeightCache weights(checkpoint, DType::kQ8);
  auto norm = weights.get("model.norm.weight", DType::kQ8);
  ASSERT_FALSE(norm.ok());
  EXPECT_NE(norm.error().message().find("converting 'model.norm.weight': q8 needs a matrix, the tensor has rank 1"),
            std::string::npos)
      << norm.error().message();
  auto missing = weights.get("model.layers.9.mlp.up_proj.weight", DType::kF32);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  auto integer = weights.get("model.norm.weight", DType::kI32);
  ASSERT_FALSE(integer.ok());
  EXPECT_NE(integer.error().message().find("cannot convert to dtype i32"), std::string::npos);
}

}  // namespace
}  // namespace kestrel::exporter
