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
  command->add_option("PROGRAM", path, "Program file (.kst)")->required();
  command->callback([] {
    auto loaded = program::LoadedProgram::load_file(path);
    if (!loaded.ok()) {
      fmt::print(stderr, "kestrel inspect: {}\n", loaded.error().to_string());
      set_exit_code(1);
      return;
    }
    fmt::print("{}", program::describe_program(**loaded));
  });
}

}  // namespace kestrel::tools
