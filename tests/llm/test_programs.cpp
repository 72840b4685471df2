#include "llm/test_programs.h"

#include <atomic>
#include <fstream>
#include <unistd.h>

#include "kestrel/core/error_helpers.h"
#include "kestrel/export/checkpoint.h"

namespace kestrel::testing {

TempDir::TempDir() {
  static std::atomic<int> counter{0};
  path_ = std::filesystem::temp_directory_path() /
          ("kestrel-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  std::filesystem::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

program::ProgramSpec export_fixture(const fixtures::FixtureConfig& config, const exporter::ExportOptions& options,
                                    bool llama2c, const std::string& tokenizer_json) {
  TempDir dir;
  std::string path = dir.file("model");
  exporter::CheckpointOptions checkpoint_options;
  if (llama2c) {
    path = dir.file("model.bin");
    EXPECT_TRUE(fixtures::write_llama2c_checkpoint(path, config).ok());
    // A minimal tokenizer.bin: one single-byte token per id.
    std::ofstream tokenizer(dir.file("tokenizer.bin"), std::ios::binary);
    const int32_t max_len = 8;
    tokenizer.write(reinterpret_cast<const char*>(&max_len), 4);
    for (int64_t i = 0; i < config.vocab_size; ++i) {
      const float score = 0;
      std::string piece = i < 3 ? std::string(i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>")
                                : std::string(1, static_cast<char>(i));
      const auto len = static_cast<int32_t>(piece.size());
      tokenizer.write(reinterpret_cast<const char*>(&score), 4);
      tokenizer.write(reinterpret_cast<const char*>(&len), 4);
      tokenizer.write(piece.data(), len);
    }
    checkpoint_options.tokenizer_path = dir.file("tokenizer.bin");
  } else {
    auto status = fixtures::write_hf_checkpoint(path, config, tokenizer_json);
    EXPECT_TRUE(status.ok()) << status.error().to_string();
  }
  auto checkpoint = exporter::load_checkpoint(path, checkpoint_options);
  EXPECT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();
  if (!checkpoint.ok()) return {};
  auto spec = exporter::export_program(*checkpoint, options);
  EXPECT_TRUE(spec.ok()) << spec.error().to_string();
  if (!spec.ok()) return {};
  return std::move(spec).value();  // owns its bytes: the checkpoint files may go
}

Result<program::ProgramSpec> try_export_fixture(const fixtures::FixtureConfig& config,
                                                const exporter::ExportOptions& options) {
  TempDir dir;
  KESTREL_RETURN_IF_ERROR(fixtures::write_hf_checkpoint(dir.file("model"), config));
  KESTREL_ASSIGN_OR_RETURN(auto checkpoint, exporter::load_checkpoint(dir.file("model")));
  return exporter::export_program(checkpoint, options);
}

std::shared_ptr<runtime::Program> load_spec(const program::ProgramSpec& spec,
                                            std::shared_ptr<const runtime::BackendRegistry> backends) {
  auto bytes = program::serialize_program(spec);
  EXPECT_TRUE(bytes.ok()) << bytes.error().to_string();
  if (!bytes.ok()) return nullptr;
  auto loaded = program::LoadedProgram::load_bytes(*bytes);
  EXPECT_TRUE(loaded.ok()) << loaded.error().to_string();
  if (!loaded.ok()) return nullptr;
  auto program = runtime::Program::from_loaded(*loaded, kernels::portable_kernel_registry(), std::move(backends));
  EXPECT_TRUE(program.ok());
  return *program;
}

}  // namespace kestrel::testing
