#include "tools/commands.h"

namespace kestrel::tools {

namespace {
int g_exit_code = 0;
}

int exit_code() { return g_exit_code; }
void set_exit_code(int code) { g_exit_code = code; }

void register_commands(CLI::App& app) {
  add_create_model_command(app);
  add_export_command(app);
  add_run_command(app);
  add_inspect_command(app);
  add_chat_template_command(app);
  add_bench_command(app);
}

}  // namespace kestrel::tools
