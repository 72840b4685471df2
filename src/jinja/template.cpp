#include "kestrel/jinja/template.h"

#include <nlohmann/json.hpp>

#include "jinja/interpreter.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

// The parsed template owns its normalized source: tokens and errors point into it.
struct Program {
  std::string source;
  std::unique_ptr<SourceMap> map;
  Body body;
};

namespace {

// The first byte offset where `text` is not well-formed UTF-8, or npos.
size_t invalid_utf8_offset(std::string_view text) {
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    if (length == 1 && cp >= 0x80) return pos;
    pos += length;
  }
  return std::string_view::npos;
}

}  // namespace

Result<Template> Template::parse(std::string_view source) {
  auto program = std::make_shared<Program>();
  program->source = normalize_source(source);
  program->map = std::make_unique<SourceMap>(program->source);
  if (const size_t bad = invalid_utf8_offset(program->source); bad != std::string_view::npos)
    return make_error(ErrorCode::kInvalidArgument, "{}: the template is not valid UTF-8",
                      describe_position(*program->map, bad));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Token> tokens, tokenize(program->source));
  KESTREL_ASSIGN_OR_RETURN(program->body, parse_template(tokens, *program->map));
  return Template(std::move(program));
}

Result<std::string> Template::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  if (!context.is_object())
    return make_error(ErrorCode::kInvalidArgument, "the template context must be a JSON object, got {}",
                      context.type_name());
  KESTREL_ASSIGN_OR_RETURN(Value variables, from_json(context, "the template context"));
  Interpreter interpreter(*program_->map, options);
  return interpreter.render(program_->body, variables);
}

}  // namespace kestrel::jinja
