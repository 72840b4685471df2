// Each subcommand registers itself on the app and records its exit code.
#pragma once

#include <CLI/CLI.hpp>

namespace kestrel::tools {

void register_commands(CLI::App& app);
int exit_code();
void set_exit_code(int code);

void add_inspect_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_create_model_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);
void add_bench_command(CLI::App& app);

}  // namespace kestrel::tools
