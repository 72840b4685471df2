// The chat-template engine: parse a template, then render it with a context (JSON) the way a
// chat session does. Input: template source, separator, context JSON (an object; anything else
// renders with a default conversation). Limits are smaller than the defaults to keep each run
// fast; the limits themselves are part of what is tested.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "input_parts.h"
#include "kestrel/jinja/template.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const auto parts = fuzz::split_input(data, size, 2);
  auto parsed = jinja::Template::parse(parts[0]);
  if (!parsed.ok()) return 0;
  auto context = nlohmann::ordered_json::parse(parts[1], nullptr, /*allow_exceptions=*/false);
  if (context.is_discarded() || !context.is_object()) {
    context = {{"messages", {{{"role", "system"}, {"content", "Be brief."}},
                             {{"role", "user"}, {"content", "Hi \xC3\xA9"}},
                             {{"role", "assistant"}, {"content", "Hello."}}}},
               {"add_generation_prompt", true},
               {"bos_token", "<s>"},
               {"eos_token", "</s>"}};
  }
  jinja::RenderOptions options;
  options.max_steps = 200'000;
  options.max_output_bytes = 1 << 20;
  options.now = 0;
  (void)parsed->render(context, options);
  return 0;
}
