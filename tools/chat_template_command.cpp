// kestrel chat-template PROGRAM --messages FILE.json: prints the prompt the program's chat
// template renders for a conversation, byte for byte (no newline added).
#include <fmt/format.h>

#include <cstdio>

#include "kestrel/llm/chat_template.h"
#include "kestrel/program/loaded_program.h"
#include "tools/chat_input.h"
#include "tools/commands.h"

namespace kestrel::tools {

namespace {

struct ChatTemplateArgs {
  std::string program;
  std::string messages;
  bool no_generation_prompt = false;
};

Result<std::string> render_prompt(const ChatTemplateArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto loaded, program::LoadedProgram::load_file(args.program));
  KESTREL_ASSIGN_OR_RETURN(auto chat_template, llm::ChatTemplate::from_metadata(loaded->spec().metadata));
  if (!chat_template) return Error(ErrorCode::kNotFound, "'" + args.program + "' has no chat template");
  KESTREL_ASSIGN_OR_RETURN(ChatInput input, read_chat_input(args.messages));
  llm::ChatRenderOptions options;
  options.add_generation_prompt = !args.no_generation_prompt;
  options.extra = input.extra;
  return chat_template->render(input.messages, options);
}

}  // namespace

void add_chat_template_command(CLI::App& app) {
  auto* command = app.add_subcommand("chat-template", "Print the prompt a program's chat template renders for a conversation");
  static ChatTemplateArgs args;
  command->add_option("PROGRAM", args.program, "Program file (.kst)")->required();
  command->add_option("--messages", args.messages,
                      "JSON file: a list of messages, or {\"messages\": [...], \"tools\": [...], ...}")
      ->required();
  command->add_flag("--no-generation-prompt", args.no_generation_prompt,
                    "Do not open an assistant turn at the end (add_generation_prompt=false)");
  command->callback([] {
    auto prompt = render_prompt(args);
    if (!prompt.ok()) {
      fmt::print(stderr, "kestrel chat-template: {}\n", prompt.error().to_string());
      set_exit_code(1);
      return;
    }
    std::fwrite(prompt->data(), 1, prompt->size(), stdout);
  });
}

}  // namespace kestrel::tools
