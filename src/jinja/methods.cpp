// Methods templates call on values: Python's str methods and the read-only dict methods (the
// sandbox refuses the mutating ones, so lists offer none).
#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/text.h"
#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const std::string& part : parts) items.emplace_back(part);
  return Value::list(std::move(items));
}

Result<std::optional<int64_t>> optional_index(const std::optional<Value>& value, const std::string& function) {
  if (!value || value->is_none()) return std::optional<int64_t>();
  if (!value->is_number() || value->is_float())
    return fail(function + "(): slice indices must be integers or None");
  return std::optional<int64_t>(value->as_int());
}

Result<std::string> string_argument(const std::optional<Value>& value, const std::string& function,
                                    const char* what) {
  if (!value || !value->is_string())
    return fail(function + "() argument '" + what + "' must be str, not " +
                (value ? type_name(*value) : std::string("missing")));
  return value->as_string();
}

using StringMethod = Result<Value> (*)(const std::string& self, CallArgs& args);

Result<Value> affix_check(const std::string& self, CallArgs& args, const char* name, bool prefix) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(name, args, {"affix", "start", "end"}));
  if (!a[0]) return fail(std::string(name) + "() takes at least 1 argument (0 given)");
  KESTREL_ASSIGN_OR_RETURN(auto start, optional_index(a[1], name));
  KESTREL_ASSIGN_OR_RETURN(auto end, optional_index(a[2], name));
  const std::string_view window = py_substring(self, start, end);
  std::vector<Value> candidates;
  if (a[0]->is_string()) candidates.push_back(*a[0]);
  else if (a[0]->kind() == Value::Kind::kTuple) candidates = a[0]->items();
  else
    return fail(fmt::format("{} first arg must be str or a tuple of str, not {}", name, type_name(*a[0])));
  for (const Value& candidate : candidates) {
    if (!candidate.is_string())
      return fail(fmt::format("tuple for {} must only contain str, not {}", name, type_name(candidate)));
    const std::string& c = candidate.as_string();
    if (c.size() <= window.size() &&
        (prefix ? window.compare(0, c.size(), c) == 0 : window.compare(window.size() - c.size(), c.size(), c) == 0))
      return Value(true);
  }
  return Value(false);
}

Result<Value> startswith(const std::string& self, CallArgs& args) { return affix_check(self, args, "startswith", true); }
Result<Value> endswith(const std::string& self, CallArgs& args) { return affix_check(self, args, "endswith", false); }

Result<Value> split_common(const std::string& self, CallArgs& args, const char* name, bool from_right) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(name, args, {"sep", "maxsplit"}));
  std::optional<std::string_view> separator;
  if (a[0] && !a[0]->is_none()) {
    if (!a[0]->is_string()) return fail(std::string("must be str or None, not ") + type_name(*a[0]));
    if (a[0]->as_string().empty()) return fail("empty separator");
    separator = a[0]->as_string();
  }
  int64_t max_split = -1;
  if (a[1]) {
    if (!a[1]->is_number() || a[1]->is_float()) return fail("maxsplit must be an integer");
    max_split = a[1]->as_int();
  }
  return string_list(py_split(self, separator, max_split, from_right));
}

Result<Value> split(const std::string& self, CallArgs& args) { return split_common(self, args, "split", false); }
Result<Value> rsplit(const std::string& self, CallArgs& args) { return split_common(self, args, "rsplit", true); }

Result<Value> strip_common(const std::string& self, CallArgs& args, const char* name, bool left, bool right) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(name, args, {"chars"}));
  if (a[0] && !a[0]->is_none()) {
    if (!a[0]->is_string()) return fail(std::string(name) + " arg must be None or str");
    return Value(std::string(strip(self, a[0]->as_string(), false, left, right)));
  }
  return Value(std::string(strip(self, "", true, left, right)));
}

Result<Value> strip_both(const std::string& self, CallArgs& args) { return strip_common(self, args, "strip", true, true); }
Result<Value> lstrip(const std::string& self, CallArgs& args) { return strip_common(self, args, "lstrip", true, false); }
Result<Value> rstrip(const std::string& self, CallArgs& args) { return strip_common(self, args, "rstrip", false, true); }

template <std::string (*Transform)(std::string_view)>
Result<Value> no_argument_transform(const std::string& self, CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty()) return fail("this method takes no arguments");
  return Value(Transform(self));
}

Result<Value> str_replace(const std::string& self, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("replace", args, {"old", "new", "count"}));
  KESTREL_ASSIGN_OR_RETURN(std::string old, string_argument(a[0], "replace", "old"));
  KESTREL_ASSIGN_OR_RETURN(std::string with, string_argument(a[1], "replace", "new"));
  int64_t count = -1;
  if (a[2]) {
    if (!a[2]->is_number() || a[2]->is_float()) return fail("replace() count must be an integer");
    count = a[2]->as_int();
  }
  return Value(py_replace(self, old, with, count));
}

Result<Value> find_common(const std::string& self, CallArgs& args, const char* name, bool from_right, bool raise) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(name, args, {"sub", "start", "end"}));
  KESTREL_ASSIGN_OR_RETURN(std::string needle, string_argument(a[0], name, "sub"));
  KESTREL_ASSIGN_OR_RETURN(auto start, optional_index(a[1], name));
  KESTREL_ASSIGN_OR_RETURN(auto end, optional_index(a[2], name));
  const int64_t index = py_find(self, needle, start, end, from_right);
  if (index < 0 && raise) return fail("substring not found");
  return Value(index);
}

Result<Value> find(const std::string& self, CallArgs& args) { return find_common(self, args, "find", false, false); }
Result<Value> rfind(const std::string& self, CallArgs& args) { return find_common(self, args, "rfind", true, false); }
Result<Value> index(const std::string& self, CallArgs& args) { return find_common(self, args, "index", false, true); }

Result<Value> count(const std::string& self, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("count", args, {"sub", "start", "end"}));
  KESTREL_ASSIGN_OR_RETURN(std::string needle, string_argument(a[0], "count", "sub"));
  KESTREL_ASSIGN_OR_RETURN(auto start, optional_index(a[1], "count"));
  KESTREL_ASSIGN_OR_RETURN(auto end, optional_index(a[2], "count"));
  const std::string_view window = py_substring(self, start, end);
  if (needle.empty()) return Value(static_cast<int64_t>(code_point_count(window) + 1));
  int64_t n = 0;
  for (size_t pos = window.find(needle); pos != std::string_view::npos; pos = window.find(needle, pos + needle.size()))
    ++n;
  return Value(n);
}

Result<Value> str_join(const std::string& self, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("join", args, {"iterable"}));
  if (!a[0]) return fail("join() takes exactly one argument (0 given)");
  std::vector<Value> items;
  if (a[0]->is_sequence() || a[0]->kind() == Value::Kind::kIterator) {
    if (a[0]->kind() != Value::Kind::kIterator || a[0]->consume_iterator()) items = a[0]->items();
  } else if (a[0]->is_string()) {
    const auto offsets = code_point_offsets(a[0]->as_string());
    for (size_t i = 0; i + 1 < offsets.size(); ++i)
      items.emplace_back(a[0]->as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
  } else if (a[0]->kind() == Value::Kind::kDict) {
    for (const auto& entry : a[0]->entries()) items.push_back(entry.first);
  } else {
    return fail("can only join an iterable");
  }
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string())
      return fail(fmt::format("sequence item {}: expected str instance, {} found", i, type_name(items[i])));
    if (i > 0) out += self;
    out += items[i].as_string();
  }
  return Value(std::move(out));
}

Result<Value> splitlines(const std::string& self, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("splitlines", args, {"keepends"}));
  return string_list(py_splitlines(self, a[0] && truthy(*a[0])));
}

template <bool (*Predicate)(uint32_t)>
Result<Value> all_characters(const std::string& self, CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty()) return fail("this method takes no arguments");
  if (self.empty()) return Value(false);
  for (size_t pos = 0; pos < self.size();) {
    size_t length = 0;
    if (!Predicate(decode_at(self, pos, &length))) return Value(false);
    pos += length;
  }
  return Value(true);
}

template <bool Upper>
Result<Value> cased(const std::string& self, CallArgs& args) {
  if (!args.positional.empty() || !args.keyword.empty()) return fail("this method takes no arguments");
  return Value(py_is_cased(self, Upper));
}

Result<Value> affix_remove(const std::string& self, CallArgs& args, bool prefix) {
  const char* name = prefix ? "removeprefix" : "removesuffix";
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(name, args, {"affix"}));
  KESTREL_ASSIGN_OR_RETURN(std::string affix, string_argument(a[0], name, "affix"));
  if (affix.size() <= self.size()) {
    if (prefix && self.compare(0, affix.size(), affix) == 0) return Value(self.substr(affix.size()));
    if (!prefix && self.compare(self.size() - affix.size(), affix.size(), affix) == 0)
      return Value(self.substr(0, self.size() - affix.size()));
  }
  return Value(self);
}

Result<Value> removeprefix(const std::string& self, CallArgs& args) { return affix_remove(self, args, true); }
Result<Value> removesuffix(const std::string& self, CallArgs& args) { return affix_remove(self, args, false); }

// str.format with {} {0} {name} fields (conversions !s !r; no format specs).
Result<Value> str_format(const std::string& self, CallArgs& args) {
  std::string out;
  size_t automatic = 0;
  for (size_t i = 0; i < self.size(); ++i) {
    const char c = self[i];
    if (c == '}') {
      if (i + 1 < self.size() && self[i + 1] == '}') ++i;
      else return fail("Single '}' encountered in format string");
      out += '}';
      continue;
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < self.size() && self[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = self.find('}', i);
    if (close == std::string::npos) return fail("Single '{' encountered in format string");
    std::string field = self.substr(i + 1, close - i - 1);
    i = close;
    char conversion = 's';
    if (const size_t bang = field.find('!'); bang != std::string::npos) {
      if (bang + 2 != field.size()) return fail("invalid conversion in a format field");
      conversion = field[bang + 1];
      field.resize(bang);
    }
    if (field.find(':') != std::string::npos) return fail("format specs in str.format are not supported");
    const Value* value = nullptr;
    if (field.empty()) {
      if (automatic >= args.positional.size()) return fail("Replacement index " + std::to_string(automatic) + " out of range");
      value = &args.positional[automatic++];
    } else if (field.find_first_not_of("0123456789") == std::string::npos) {
      const size_t index = std::stoul(field.substr(0, 9));
      if (index >= args.positional.size()) return fail("Replacement index " + field + " out of range");
      value = &args.positional[index];
    } else {
      for (const auto& [name, v] : args.keyword)
        if (name == field) value = &v;
      if (value == nullptr) return fail("format field '" + field + "' is not given");
    }
    out += conversion == 'r' ? to_repr(*value) : to_str(*value);
  }
  return Value(std::move(out));
}

std::string upper_text(std::string_view s) { return to_upper(s); }
std::string lower_text(std::string_view s) { return to_lower(s); }

const std::vector<std::pair<std::string_view, StringMethod>>& string_methods() {
  static const std::vector<std::pair<std::string_view, StringMethod>> kMethods = {
      {"startswith", startswith},
      {"endswith", endswith},
      {"split", split},
      {"rsplit", rsplit},
      {"strip", strip_both},
      {"lstrip", lstrip},
      {"rstrip", rstrip},
      {"upper", no_argument_transform<upper_text>},
      {"lower", no_argument_transform<lower_text>},
      {"title", no_argument_transform<py_title>},
      {"capitalize", no_argument_transform<py_capitalize>},
      {"replace", str_replace},
      {"find", find},
      {"rfind", rfind},
      {"index", index},
      {"count", count},
      {"join", str_join},
      {"splitlines", splitlines},
      {"isdigit", all_characters<is_digit>},
      {"isalpha", all_characters<is_alpha>},
      {"isalnum", all_characters<is_alnum>},
      {"isspace", all_characters<is_python_space>},
      {"isupper", cased<true>},
      {"islower", cased<false>},
      {"removeprefix", removeprefix},
      {"removesuffix", removesuffix},
      {"format", str_format},
  };
  return kMethods;
}

Result<Value> dict_method(const Value& self, const std::string& name, CallArgs& args) {
  if (name == "get") {
    KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("get", args, {"key", "default"}));
    if (!a[0]) return fail("get expected at least 1 argument, got 0");
    if (const Value* value = self.find(*a[0])) return *value;
    return a[1] ? *a[1] : Value::none();
  }
  if (!args.positional.empty() || !args.keyword.empty()) return fail(name + "() takes no arguments");
  std::vector<Value> items;
  for (const auto& [key, value] : self.entries()) {
    if (name == "keys") items.push_back(key);
    else if (name == "values") items.push_back(value);
    else items.push_back(Value::tuple({key, value}));
  }
  return Value::list(std::move(items));
}

}  // namespace

std::optional<Value> find_method(const Value& object, const std::string& name) {
  if (object.is_string()) {
    for (const auto& [method_name, method] : string_methods())
      if (method_name == name) {
        const std::string self = object.as_string();
        const StringMethod function = method;
        return Value::callable(name, [self, function](Interpreter&, CallArgs& args) { return function(self, args); });
      }
    return std::nullopt;
  }
  if (object.kind() == Value::Kind::kDict && (name == "items" || name == "keys" || name == "values" || name == "get")) {
    return Value::callable(name, [object, name](Interpreter&, CallArgs& args) { return dict_method(object, name, args); });
  }
  return std::nullopt;
}

}  // namespace kestrel::jinja
