#include <fmt/format.h>

#include <cstdio>
#include <string>

#include "kestrel/program/describe.h"
#include "kestrel/program/loaded_program.h"
#include "tools/commands.h"

namespace kestrel::tools {

void add_inspect_command(CLI::App& app) {
  auto* command = app.add_subcommand("inspect", "Print a program's metadata, methods, I/O, instructions and delegates");
  static std::string path;
  static bool no_verify = false;
  command->add_option("PROGRAM", path, "Program file (.kst)")->required();
  command->add_flag("--no-verify", no_verify, "Skip the checksums (the structure is still verified)");
  command->callback([] {
    program::LoadOptions options;
    options.verify_checksums = !no_verify;
    auto loaded = program::LoadedProgram::load_file(path, options);
    if (!loaded.ok()) {
      fmt::print(stderr, "kestrel inspect: {}\n", loaded.error().to_string());
      set_exit_code(1);
      return;
    }
    fmt::print("{}", program::describe_program(**loaded));
  });
}

}  // namespace kestrel::tools
