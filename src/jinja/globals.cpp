// The functions every template can call: Jinja's range, dict and namespace, and transformers'
// raise_exception and strftime_now.
#include <ctime>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

// Jinja's sandbox refuses larger ranges.
constexpr int64_t kMaxRange = 100000;

Result<Value> range(Interpreter&, CallArgs& args) {
  if (!args.keyword.empty()) return fail("range() takes no keyword arguments");
  if (args.positional.empty() || args.positional.size() > 3)
    return fail("range() takes 1 to 3 arguments, got " + std::to_string(args.positional.size()));
  for (const Value& v : args.positional)
    if (!v.is_number() || v.is_float())
      return fail(fmt::format("'{}' object cannot be interpreted as an integer", type_name(v)));
  int64_t start = 0, stop = 0, step = 1;
  if (args.positional.size() == 1) {
    stop = args.positional[0].as_int();
  } else {
    start = args.positional[0].as_int();
    stop = args.positional[1].as_int();
    if (args.positional.size() == 3) step = args.positional[2].as_int();
  }
  if (step == 0) return fail("range() arg 3 must not be zero");
  std::vector<Value> items;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(items.size()) >= kMaxRange)
      return fail("Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
    items.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::list(std::move(items));
}

// dict(...) and namespace(...): an optional mapping or list of pairs, then keywords.
Result<std::vector<std::pair<Value, Value>>> collect_entries(const char* function, CallArgs& args) {
  if (args.positional.size() > 1)
    return fail(std::string(function) + "() takes at most 1 positional argument");
  std::vector<std::pair<Value, Value>> entries;
  auto put = [&](Value key, Value value) {
    for (auto& [k, v] : entries)
      if (equals(k, key)) {
        v = std::move(value);
        return;
      }
    entries.emplace_back(std::move(key), std::move(value));
  };
  if (!args.positional.empty()) {
    const Value& source = args.positional[0];
    if (source.is_mapping()) {
      for (const auto& [k, v] : source.entries()) put(k, v);
    } else if (source.is_sequence()) {
      for (const Value& pair : source.items()) {
        if (!pair.is_sequence() || pair.items().size() != 2)
          return fail(std::string(function) + "() needs a mapping or a list of (key, value) pairs");
        put(pair.items()[0], pair.items()[1]);
      }
    } else {
      return fail(fmt::format("'{}' object is not iterable", type_name(source)));
    }
  }
  for (auto& [name, value] : args.keyword) put(Value(name), std::move(value));
  return entries;
}

Result<Value> make_dict(Interpreter&, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto entries, collect_entries("dict", args));
  return Value::dict(std::move(entries));
}

Result<Value> make_namespace(Interpreter&, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto entries, collect_entries("namespace", args));
  for (const auto& [key, value] : entries) {
    if (value.holds_namespace()) return fail("a namespace attribute cannot hold a namespace or a function");
    if (value.nesting() + 1 > kMaxNesting) return fail("values nest too deeply");
  }
  return Value::namespace_object(std::move(entries));
}

Result<Value> raise_exception(Interpreter&, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto bound, bind_arguments("raise_exception", args, {"message"}));
  return fail(bound[0] ? to_str(*bound[0]) : "");
}

Result<Value> strftime_now(Interpreter& interpreter, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto bound, bind_arguments("strftime_now", args, {"format"}));
  if (!bound[0] || !bound[0]->is_string()) return fail("strftime_now() needs a format string");
  const std::string& format = bound[0]->as_string();
  const std::time_t now = interpreter.now();
  std::tm local{};
  localtime_r(&now, &local);
  // strftime returns 0 both for "too small" and for an empty result: grow up to a bound.
  for (size_t size = 64 + format.size() * 4; size <= (size_t{1} << 20); size *= 4) {
    std::string out(size, '\0');
    const size_t n = std::strftime(out.data(), out.size(), format.c_str(), &local);
    if (n > 0 || format.empty()) {
      out.resize(n);
      return Value(std::move(out));
    }
  }
  return Value(std::string());
}

}  // namespace

std::vector<std::pair<std::string, Value>> global_functions() {
  return {{"range", Value::callable("range", range)},
          {"dict", Value::callable("dict", make_dict)},
          {"namespace", Value::callable("namespace", make_namespace)},
          {"raise_exception", Value::callable("raise_exception", raise_exception)},
          {"strftime_now", Value::callable("strftime_now", strftime_now)}};
}

}  // namespace kestrel::jinja
