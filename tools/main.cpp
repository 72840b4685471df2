// kestrel: one CLI with subcommands (export, run, inspect, bench).
#include <CLI/CLI.hpp>

#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kestrel: static-shape LLM programs for on-device inference"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kestrel 0.1.0");
  kestrel::tools::register_commands(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return kestrel::tools::exit_code();
}
