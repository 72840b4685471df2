// Jinja's filters, tests and globals, string and dict methods, and transformers' additions
// (raise_exception, strftime_now, a tojson that keeps non-ASCII text) (internal).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace kestrel::jinja {

using FilterFunction = Result<Value> (*)(Interpreter&, const Value& operand, CallArgs& args);
using TestFunction = Result<bool> (*)(Interpreter&, const Value& operand, CallArgs& args);

// A builtin called the wrong way (argument type, count or value): an invalid-argument error.
inline Error fail(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// Null when there is no such filter or test.
FilterFunction find_filter(std::string_view name);
TestFunction find_test(std::string_view name);
bool is_filter(std::string_view name);
bool is_test(std::string_view name);
// Jinja filters this engine leaves out (a template using one fails to parse, saying so).
bool is_unsupported_filter(std::string_view name);

// A bound method of `object` (str.split, dict.items, ...), or nullopt when it has none by
// that name.
std::optional<Value> find_method(const Value& object, const std::string& name);

// range, dict, namespace, raise_exception, strftime_now.
std::vector<std::pair<std::string, Value>> global_functions();

// Binds call arguments to parameters by position and keyword, Python style: one slot per
// parameter, empty when not given. Too many positional arguments, unknown keywords and a
// parameter given twice are errors naming `function`.
Result<std::vector<std::optional<Value>>> bind_arguments(const std::string& function, CallArgs& args,
                                                         const std::vector<std::string_view>& parameters);

}  // namespace kestrel::jinja
