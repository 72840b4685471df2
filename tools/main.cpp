// kestrel: one CLI with subcommands (export, run, inspect, bench).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "tools/cli_checks.h"
#include "tools/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"kestrel: static-shape LLM programs for on-device inference"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "kestrel 0.1.0");
  kestrel::tools::register_commands(app);
  if (const std::string unknown = kestrel::tools::unknown_command_message(app, argc, argv); !unknown.empty()) {
    fmt::print(stderr, "kestrel: {}\nRun with --help for more information.\n", unknown);
    return 2;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return kestrel::tools::exit_code();
}
