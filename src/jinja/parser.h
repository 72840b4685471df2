// Builds the syntax tree from tokens, following Jinja's grammar and precedence (internal).
#pragma once

#include <string_view>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"
#include "kestrel/core/result.h"

namespace kestrel::jinja {

// Unknown tags, filters and tests are errors here, as Jinja reports them when it compiles.
// Errors are kInvalidArgument "line L, column C: ...".
Result<Body> parse_template(const std::vector<Token>& tokens, const SourceMap& map);

}  // namespace kestrel::jinja
