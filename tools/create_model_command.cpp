// kestrel create-model DIR: writes the project's embedded default model (a small
// Llama-architecture checkpoint in HF format with its own byte-level BPE tokenizer), so
// export -> run works on a machine with no download.
#include <fmt/format.h>

#include "kestrel/fixtures/default_model.h"
#include "tools/commands.h"

namespace kestrel::tools {

void add_create_model_command(CLI::App& app) {
  auto* command = app.add_subcommand("create-model", "Write the embedded default model as an HF checkpoint directory");
  static std::string directory;
  static uint64_t seed = fixtures::kDefaultModelSeed;
  command->add_option("DIR", directory, "Directory to create")->required();
  command->add_option("--seed", seed, "Weight seed")->capture_default_str();
  command->callback([] {
    auto status = fixtures::write_default_model(directory, seed);
    if (!status.ok()) {
      fmt::print(stderr, "kestrel create-model: {}\n", status.error().to_string());
      set_exit_code(1);
      return;
    }
    fmt::print(stderr, "wrote the default model to {}\n", directory);
  });
}

}  // namespace kestrel::tools
