// An export streamed to a file: loading the program back, every weight constant equals an
// independent conversion of its checkpoint tensor (f32, f16, bf16, q8; row slices of fused
// projections), each weight is stored once and shared by prefill and decode, and the tied
// classifier is the embedding.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <charconv>
#include <map>
#include <set>

#include "export/conversion_reference.h"
#include "export/scratch_dir.h"
#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"

namespace kestrel::exporter {
namespace {

using testing::ScratchDir;

// "name[begin:end]" -> (name, begin, end); a plain name -> (name, -1, -1).
std::tuple<std::string, int64_t, int64_t> parse_rows(const std::string& value_name) {
  const size_t open = value_name.rfind('[');
  if (open == std::string::npos || value_name.back() != ']') return {value_name, -1, -1};
  const size_t colon = value_name.find(':', open);
  int64_t begin = 0, end = 0;
  std::from_chars(value_name.data() + open + 1, value_name.data() + colon, begin);
  std::from_chars(value_name.data() + colon + 1, value_name.data() + value_name.size() - 1, end);
  return {value_name.substr(0, open), begin, end};
}

void expect_constants_match_checkpoint(const std::string& architecture, DType program_dtype) {
  SCOPED_TRACE(fmt::format("{} exported to {}", architecture, dtype_name(program_dtype)));
  ScratchDir dir;
  fixtures::FixtureConfig fixture;
  fixture.architecture = architecture;
  fixture.dtype = DType::kBF16;
  fixture.tie_word_embeddings = architecture == "LlamaForCausalLM";
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir / "model", fixture).ok());
  auto checkpoint = load_checkpoint(dir / "model");
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();

  ExportOptions options;
  options.prefill_step = 4;
  options.max_context = 32;
  options.dtype = program_dtype;
  auto spec = export_program(*checkpoint, options);
  ASSERT_TRUE(spec.ok()) << spec.error().to_string();
  const std::string path = dir / "model.kst";
  auto written = program::write_program(*spec, path);
  ASSERT_TRUE(written.ok()) << written.error().to_string();
  auto loaded = program::LoadedProgram::load_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();

  std::map<std::string, program::ConstantRef> refs;
  std::set<std::string> checked;
  for (const auto& method : (*loaded)->spec().methods) {
    for (const auto& value : method.values) {
      if (value.kind != program::ValueKind::kConstant) continue;
      // One copy per name, shared by the methods.
      auto [it, inserted] = refs.emplace(value.name, value.constant);
      if (!inserted) {
        EXPECT_EQ(it->second, value.constant) << value.name << " in method " << method.name;
      }
      const auto [tensor_name, begin, end] = parse_rows(value.name);
      if (!checkpoint->has_tensor(tensor_name) || !checked.insert(value.name).second) continue;
      auto tensor = checkpoint->tensor(tensor_name);
      ASSERT_TRUE(tensor.ok());
      std::span<const uint8_t> source = tensor->bytes;
      int64_t rows = tensor->shape.empty() ? 1 : tensor->shape[0];
      if (begin >= 0) {
        const size_t row_bytes = source.size() / static_cast<size_t>(rows);
        source = source.subspan(static_cast<size_t>(begin) * row_bytes, static_cast<size_t>(end - begin) * row_bytes);
        rows = end - begin;
      }
      const auto bytes = (*loaded)->constant_bytes(value);
      if (value.dtype == DType::kQ8) {
        testing::expect_q8_of(bytes, source, tensor->dtype, rows, tensor->shape.back(), value.name);
      } else {
        EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.end()),
                  testing::expected_conversion(source, tensor->dtype, value.dtype))
            << value.name;
      }
    }
  }
  // Every checkpoint tensor the decoder reads was compared (fused ones through their slices).
  std::set<std::string> compared_tensors;
  for (const auto& name : checked) compared_tensors.insert(std::get<0>(parse_rows(name)));
  for (const auto& requirement : required_tensors(checkpoint->config()))
    EXPECT_TRUE(compared_tensors.count(requirement.name)) << requirement.name << " is not in the program";
  if (fixture.tie_word_embeddings) {
    EXPECT_EQ(refs.count("lm_head.weight"), 0u) << "the classifier is the embedding";
  }
}

TEST(StreamedExport, ConstantsAreTheCheckpointsConvertedTensors) {
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16, DType::kQ8}) {
    expect_constants_match_checkpoint("LlamaForCausalLM", dtype);
    expect_constants_match_checkpoint("Phi3ForCausalLM", dtype);
  }
}

}  // namespace
}  // namespace kestrel::exporter
