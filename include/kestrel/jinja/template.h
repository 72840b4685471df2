// A Jinja template engine for chat templates: the subset of Jinja 3 that Hugging Face chat
// templates use, rendered the way transformers renders them (an immutable sandbox with
// trim_blocks and lstrip_blocks, loop controls, raise_exception, strftime_now and a tojson
// that keeps non-ASCII text).
//
// Templates are untrusted input: parse and render errors come back as values naming the line
// and column, and rendering stops with an error when it would exceed the limits below (call
// depth, steps, output size) instead of exhausting the stack, memory or time.
//
// Supported: text, {{ }}, {# #}, {% raw %}, whitespace control ({%- -%} {%+ +%});
// if/elif/else, for (tuple targets, "if" filter, else, loop.index/index0/revindex/revindex0/
// first/last/length/previtem/nextitem/cycle, break, continue), set (names, tuples, namespace
// attributes, block set with filters), macro (defaults, keyword arguments), filter blocks,
// with, generation blocks; literals, lists, tuples, dicts, attribute and item access,
// slicing, calls, filters, tests, arithmetic, ~, comparisons (chained), in / not in,
// and/or/not, conditional expressions, Python %-formatting of strings.
// Not supported (a parse error says so): extends, block, include, import, call blocks,
// recursive loops, *args/**kwargs in calls.
#pragma once

#include <cstdint>
#include <ctime>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "kestrel/core/result.h"

namespace kestrel::jinja {

struct RenderOptions {
  int64_t max_output_bytes = int64_t{16} << 20;  // also bounds every string the template builds
  int max_call_depth = 64;                       // nested macro calls
  int64_t max_steps = 20'000'000;                // evaluated expressions and statements
  // The clock strftime_now reads (local time); unset: the current time.
  std::optional<std::time_t> now;
};

struct Program;  // the parsed template

class Template {
 public:
  // Parses `source` (UTF-8). Errors are kInvalidArgument "line L, column C: what" (positions
  // in the source after \r\n and \r became \n).
  static Result<Template> parse(std::string_view source);

  // Renders with the members of `context` (a JSON object) as variables; objects keep their
  // member order, as Python dicts do. Errors are kInvalidArgument "line L, column C: what";
  // raise_exception(message) ends with its message.
  Result<std::string> render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

 private:
  explicit Template(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  std::shared_ptr<const Program> program_;
};

}  // namespace kestrel::jinja
