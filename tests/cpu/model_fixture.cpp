#include "cpu/model_fixture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "kestrel/export/checkpoint.h"
#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/program/writer.h"
#include "kestrel/runtime/buffer_allocator.h"
#include "kestrel/runtime/method.h"

namespace kestrel::cpu::testing {

program::ProgramSpec small_model_spec(DType dtype, int64_t prefill_step, int64_t max_context,
                                      const std::vector<int64_t>& extra_prefill_steps, DType cache_dtype,
                                      bool cpu_fusions) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() /
                   ("kestrel-cpu-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fixtures::FixtureConfig config;
  config.vocab_size = 200;
  config.hidden_size = 64;
  config.intermediate_size = 96;
  config.num_layers = 2;
  config.num_heads = 4;
  config.num_kv_heads = 2;
  config.max_position_embeddings = 64;
  config.init_scale = 0.2f;
  config.bos_id = 1;
  config.eos_id = 2;
  program::ProgramSpec out;
  auto status = fixtures::write_hf_checkpoint(dir.string(), config);
  EXPECT_TRUE(status.ok()) << status.error().to_string();
  if (status.ok()) {
    auto checkpoint = exporter::load_checkpoint(dir.string());
    EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
    if (checkpoint.ok()) {
      exporter::ExportOptions options;
      options.dtype = dtype;
      options.cache_dtype = cache_dtype;
      options.prefill_step = prefill_step;
      options.extra_prefill_steps = extra_prefill_steps;
      options.max_context = max_context;
      options.fold_head_transposes = cpu_fusions;
      options.fuse_silu_mul = cpu_fusions;
      auto spec = exporter::export_program(*checkpoint, options);
      EXPECT_TRUE(spec.ok()) << spec.error().to_string();
      if (spec.ok()) out = std::move(spec).value();
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  return out;
}

std::shared_ptr<const program::LoadedProgram> load_program_spec(const program::ProgramSpec& spec) {
  auto bytes = program::serialize_program(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  if (!bytes.ok()) return nullptr;
  auto program = program::LoadedProgram::load_bytes(*bytes);
  EXPECT_TRUE(program.ok()) << program.error().to_string();
  return program.ok() ? *program : nullptr;
}

std::shared_ptr<const program::LoadedProgram> export_small_model(DType dtype, int64_t prefill_step,
                                                                 int64_t max_context,
                                                                 const std::vector<int64_t>& extra_prefill_steps,
                                                                 DType cache_dtype, bool cpu_fusions) {
  return load_program_spec(
      small_model_spec(dtype, prefill_step, max_context, extra_prefill_steps, cache_dtype, cpu_fusions));
}

std::unique_ptr<llm::HfStaticIOManager> load_io(std::shared_ptr<const program::LoadedProgram> program,
                                                std::shared_ptr<const runtime::KernelRegistry> kernels) {
  auto loaded = runtime::Program::from_loaded(std::move(program), std::move(kernels), nullptr);
  EXPECT_TRUE(loaded.ok());
  auto allocator = runtime::make_buffer_allocator("heap");
  EXPECT_TRUE(allocator.ok());
  auto io = std::make_unique<llm::HfStaticIOManager>();
  auto status = io->load(*loaded, std::move(*allocator));
  EXPECT_TRUE(status.ok()) << status.error().to_string();
  return status.ok() ? std::move(io) : nullptr;
}

}  // namespace kestrel::cpu::testing
