// Jinja's built-in filters, with transformers' tojson (json.dumps with ensure_ascii=False).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/text.h"
#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

using Slots = std::vector<std::optional<Value>>;

bool flag(const std::optional<Value>& value, bool fallback = false) { return value ? truthy(*value) : fallback; }

Result<int64_t> integer_argument(const std::optional<Value>& value, int64_t fallback, const char* what) {
  if (!value) return fallback;
  if (!value->is_number() || value->is_float())
    return fail(std::string(what) + " must be an integer, got " + type_name(*value));
  return value->as_int();
}

// make_attrgetter: "a.b.0" looks up item by item (digits as indices); `fallback` replaces an
// undefined step when given.
Result<Value> lookup_path(Interpreter& in, const Value& item, const Value& attribute, const std::optional<Value>& fallback) {
  std::vector<Value> parts;
  if (attribute.is_string()) {
    for (const std::string& part : py_split(attribute.as_string(), std::string_view("."), -1, false)) {
      const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
      parts.push_back(digits && part.size() < 18 ? Value(static_cast<int64_t>(std::stoll(part))) : Value(part));
    }
  } else if (!attribute.is_none()) {
    parts.push_back(attribute);
  }
  Value current = item;
  for (const Value& part : parts) {
    KESTREL_ASSIGN_OR_RETURN(current, in.get_item(current, part));
    if (fallback && current.is_undefined()) current = *fallback;
  }
  return current;
}

Value ignore_case(const Value& value) { return value.is_string() ? Value(to_lower(value.as_string())) : value; }

Result<Value> length(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("length", args, {}));
  switch (v.kind()) {
    case Value::Kind::kUndefined: return Value(int64_t{0});
    case Value::Kind::kString: return Value(static_cast<int64_t>(code_point_count(v.as_string())));
    case Value::Kind::kList:
    case Value::Kind::kTuple: return Value(static_cast<int64_t>(v.items().size()));
    case Value::Kind::kDict: return Value(static_cast<int64_t>(v.entries().size()));
    default: return fail("object of type '" + type_name(v) + "' has no len()");
  }
}

Result<Value> abs_filter(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("abs", args, {}));
  if (v.is_float()) return Value(std::fabs(v.as_float()));
  if (v.is_number()) {
    if (v.as_int() == INT64_MIN) return fail("integer overflow");
    return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
  }
  return fail("bad operand type for abs(): '" + type_name(v) + "'");
}

Result<Value> capitalize(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("capitalize", args, {}));
  return Value(py_capitalize(to_str(v)));
}

Result<Value> center(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("center", args, {"width"}));
  KESTREL_ASSIGN_OR_RETURN(int64_t width, integer_argument(a[0], 80, "width"));
  const std::string text = to_str(v);
  const auto n = static_cast<int64_t>(code_point_count(text));
  if (width <= n) return Value(text);
  KESTREL_RETURN_IF_ERROR(in.check_size(static_cast<size_t>(width)));
  const int64_t margin = width - n;
  const int64_t left = margin / 2 + (margin & width & 1);
  return Value(std::string(static_cast<size_t>(left), ' ') + text + std::string(static_cast<size_t>(margin - left), ' '));
}

Result<Value> default_filter(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("default", args, {"default_value", "boolean"}));
  if (v.is_undefined() || (flag(a[1]) && !truthy(v))) return a[0] ? *a[0] : Value(std::string());
  return v;
}

Result<Value> dictsort(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("dictsort", args, {"case_sensitive", "by", "reverse"}));
  if (!v.is_mapping()) return fail("dictsort needs a mapping, got " + type_name(v));
  const std::string by = a[1] && a[1]->is_string() ? a[1]->as_string() : "key";
  if (by != "key" && by != "value") return fail("You can only sort by either \"key\" or \"value\"");
  const size_t position = by == "key" ? 0 : 1;
  const bool case_sensitive = flag(a[0]);
  std::vector<Value> items;
  for (const auto& [key, value] : v.entries()) items.push_back(Value::tuple({key, value}));
  Status status;
  auto sort_key = [&](const Value& item) {
    const Value& k = item.items()[position];
    return case_sensitive ? k : ignore_case(k);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    auto order = compare(sort_key(x), sort_key(y));
    if (!order.ok()) {
      status = order.error();
      return false;
    }
    return *order < 0;
  });
  KESTREL_RETURN_IF_ERROR(status);
  if (flag(a[2])) std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Result<Value> escape(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("escape", args, {}));
  std::string out;
  for (const char c : to_str(v)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return Value(std::move(out));
}

Result<Value> first(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("first", args, {}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v));
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Result<Value> last(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("last", args, {}));
  if (v.kind() == Value::Kind::kIterator) return fail("'generator' object is not reversible");
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> items, in.iterate(v));
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

// Python's float() of a string: optional whitespace, sign, digits with single underscores,
// inf/nan; nullopt when it is not a number.
std::optional<double> parse_float(const std::string& text) {
  std::string s(strip(text, "", true, true, true));
  std::string cleaned;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      const bool between = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                           std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!between) return std::nullopt;
      continue;
    }
    cleaned += s[i];
  }
  if (cleaned.empty() || cleaned.find_first_of("xXpP") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double value = std::strtod(cleaned.c_str(), &end);
  if (end != cleaned.c_str() + cleaned.size()) return std::nullopt;
  return value;
}

Result<Value> float_filter(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("float", args, {"default"}));
  const Value fallback = a[0] ? *a[0] : Value(0.0);
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string())
    if (auto parsed = parse_float(v.as_string())) return Value(*parsed);
  return fallback;
}

// Python's int(string, base) for bases 2..36 (0: from the prefix); nullopt when invalid.
std::optional<int64_t> parse_int(const std::string& text, int64_t base) {
  std::string s(strip(text, "", true, true, true));
  bool negative = false;
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) negative = s[i++] == '-';
  auto has_prefix = [&](char p) { return i + 1 < s.size() && s[i] == '0' && (s[i + 1] | 0x20) == p; };
  if ((base == 16 || base == 0) && has_prefix('x')) base = 16, i += 2;
  else if ((base == 8 || base == 0) && has_prefix('o')) base = 8, i += 2;
  else if ((base == 2 || base == 0) && has_prefix('b')) base = 2, i += 2;
  if (base == 0) base = 10;
  if (base < 2 || base > 36 || i >= s.size()) return std::nullopt;
  int64_t value = 0;
  bool digit_seen = false;
  for (; i < s.size(); ++i) {
    if (s[i] == '_' && digit_seen && i + 1 < s.size() && s[i + 1] != '_') continue;
    const char c = static_cast<char>(s[i] | 0x20);
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99;
    if (d >= base) return std::nullopt;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, d, &value)) return std::nullopt;
    digit_seen = true;
  }
  if (!digit_seen) return std::nullopt;
  return negative ? -value : value;
}

Result<Value> int_filter(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("int", args, {"default", "base"}));
  const Value fallback = a[0] ? *a[0] : Value(int64_t{0});
  KESTREL_ASSIGN_OR_RETURN(int64_t base, integer_argument(a[1], 10, "base"));
  auto from_float = [&](double d) -> Result<Value> {
    if (std::isnan(d)) return fallback;
    if (std::isinf(d)) return fail("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) return fail("integer overflow (values beyond 64 bits are not supported)");
    return Value(static_cast<int64_t>(std::trunc(d)));
  };
  if (v.is_float()) return from_float(v.as_float());
  if (v.is_number()) return Value(v.as_int());
  if (v.is_string()) {
    if (auto parsed = parse_int(v.as_string(), base)) return Value(*parsed);
    if (auto parsed = parse_float(v.as_string())) return from_float(*parsed);
  }
  return fallback;
}

Result<Value> indent(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("indent", args, {"width", "first", "blank"}));
  std::string indention(4, ' ');
  if (a[0] && a[0]->is_string()) {
    indention = a[0]->as_string();
  } else if (a[0]) {
    KESTREL_ASSIGN_OR_RETURN(int64_t width, integer_argument(a[0], 4, "width"));
    KESTREL_RETURN_IF_ERROR(in.check_size(static_cast<size_t>(std::max<int64_t>(width, 0))));
    indention = std::string(static_cast<size_t>(std::max<int64_t>(width, 0)), ' ');
  }
  const std::vector<std::string> lines = py_splitlines(to_str(v) + "\n", false);
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if ((i > 0 || flag(a[1])) && (flag(a[2]) || !lines[i].empty())) out += indention;
    out += lines[i];
    KESTREL_RETURN_IF_ERROR(in.check_size(out.size()));
  }
  if (lines.empty() && flag(a[1])) out = indention;
  return Value(std::move(out));
}

Result<Value> items(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("items", args, {}));
  if (v.is_undefined()) return Value::iterator({});
  if (v.kind() != Value::Kind::kDict) return fail("Can only get item pairs from a mapping.");
  std::vector<Value> pairs;
  for (const auto& [key, value] : v.entries()) pairs.push_back(Value::tuple({key, value}));
  return Value::iterator(std::move(pairs));
}

Result<Value> join(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("join", args, {"d", "attribute"}));
  const std::string separator = a[0] ? to_str(*a[0]) : "";
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  std::string out;
  for (size_t i = 0; i < values.size(); ++i) {
    Value item = values[i];
    if (a[1] && !a[1]->is_none()) {
      KESTREL_ASSIGN_OR_RETURN(item, lookup_path(in, item, *a[1], std::nullopt));
    }
    if (i > 0) out += separator;
    out += to_str(item);
    KESTREL_RETURN_IF_ERROR(in.check_size(out.size()));
  }
  return Value(std::move(out));
}

Result<Value> list(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("list", args, {}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  return Value::list(std::move(values));
}

Result<Value> lower(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("lower", args, {}));
  return Value(to_lower(to_str(v)));
}

Result<Value> upper(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("upper", args, {}));
  return Value(to_upper(to_str(v)));
}

// Splits "name, *args, **kwargs" for filters that take a filter or test name first.
struct NamedCall {
  std::string name;
  CallArgs rest;
};
Result<std::optional<NamedCall>> named_call(CallArgs& args, size_t name_index) {
  if (args.positional.size() <= name_index) return std::optional<NamedCall>();
  NamedCall call;
  if (!args.positional[name_index].is_string()) return fail("expected a filter or test name");
  call.name = args.positional[name_index].as_string();
  call.rest.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(name_index) + 1,
                              args.positional.end());
  call.rest.keyword = args.keyword;
  return std::optional<NamedCall>(std::move(call));
}

Result<Value> map(Interpreter& in, const Value& v, CallArgs& args) {
  std::vector<Value> out;
  if (!truthy(v)) return Value::iterator({});
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  if (args.positional.empty()) {
    std::optional<Value> attribute, fallback;
    for (auto& [name, value] : args.keyword) {
      if (name == "attribute") attribute = value;
      else if (name == "default") fallback = value;
      else return fail("Unexpected keyword argument '" + name + "'");
    }
    if (!attribute) return fail("map requires a filter argument");
    for (const Value& item : values) {
      KESTREL_ASSIGN_OR_RETURN(Value mapped, lookup_path(in, item, *attribute, fallback));
      out.push_back(std::move(mapped));
    }
    return Value::iterator(std::move(out));
  }
  KESTREL_ASSIGN_OR_RETURN(auto call, named_call(args, 0));
  for (const Value& item : values) {
    CallArgs rest = call->rest;
    KESTREL_ASSIGN_OR_RETURN(Value mapped, in.apply_filter(call->name, item, rest));
    out.push_back(std::move(mapped));
  }
  return Value::iterator(std::move(out));
}

// select, reject, selectattr, rejectattr.
Result<Value> select_items(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attribute) {
  if (!truthy(v)) return Value::iterator({});
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  std::optional<Value> attribute;
  if (by_attribute) {
    if (args.positional.empty()) return fail("Missing parameter for attribute name");
    attribute = args.positional[0];
  }
  KESTREL_ASSIGN_OR_RETURN(auto call, named_call(args, by_attribute ? 1 : 0));
  std::vector<Value> out;
  for (const Value& item : values) {
    Value subject = item;
    if (attribute) {
      KESTREL_ASSIGN_OR_RETURN(subject, lookup_path(in, item, *attribute, std::nullopt));
    }
    bool passed = false;
    if (call) {
      CallArgs rest = call->rest;
      KESTREL_ASSIGN_OR_RETURN(passed, in.apply_test(call->name, subject, rest));
    } else {
      passed = truthy(subject);
    }
    if (passed == keep) out.push_back(item);
  }
  return Value::iterator(std::move(out));
}

Result<Value> select(Interpreter& in, const Value& v, CallArgs& args) { return select_items(in, v, args, true, false); }
Result<Value> reject(Interpreter& in, const Value& v, CallArgs& args) { return select_items(in, v, args, false, false); }
Result<Value> selectattr(Interpreter& in, const Value& v, CallArgs& args) { return select_items(in, v, args, true, true); }
Result<Value> rejectattr(Interpreter& in, const Value& v, CallArgs& args) { return select_items(in, v, args, false, true); }

// Sort keys for sort/min/max/unique: the attribute paths (comma separated for sort), lower
// cased unless case sensitive.
Result<Value> sort_key(Interpreter& in, const Value& item, const std::optional<Value>& attribute, bool case_sensitive,
                       bool multiple) {
  if (!attribute || attribute->is_none()) return case_sensitive ? item : ignore_case(item);
  std::vector<Value> paths;
  if (multiple && attribute->is_string())
    for (const std::string& p : py_split(attribute->as_string(), std::string_view(","), -1, false)) paths.emplace_back(p);
  else
    paths.push_back(*attribute);
  std::vector<Value> keys;
  for (const Value& path : paths) {
    KESTREL_ASSIGN_OR_RETURN(Value key, lookup_path(in, item, path, std::nullopt));
    keys.push_back(case_sensitive ? key : ignore_case(key));
  }
  if (!multiple) return keys.front();
  return Value::list(std::move(keys));
}

Result<Value> sort(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("sort", args, {"reverse", "case_sensitive", "attribute"}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  std::vector<std::pair<Value, Value>> keyed;
  for (Value& item : values) {
    KESTREL_ASSIGN_OR_RETURN(Value key, sort_key(in, item, a[2], flag(a[1]), true));
    keyed.emplace_back(std::move(key), std::move(item));
  }
  Status status;
  const bool descending = flag(a[0]);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
    auto order = descending ? compare(y.first, x.first) : compare(x.first, y.first);
    if (!order.ok()) {
      status = order.error();
      return false;
    }
    return *order < 0;
  });
  KESTREL_RETURN_IF_ERROR(status);
  std::vector<Value> sorted;
  for (auto& entry : keyed) sorted.push_back(std::move(entry.second));
  return Value::list(std::move(sorted));
}

Result<Value> min_max(Interpreter& in, const Value& v, CallArgs& args, bool want_max) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments(want_max ? "max" : "min", args, {"case_sensitive", "attribute"}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  if (values.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  KESTREL_ASSIGN_OR_RETURN(Value best_key, sort_key(in, values[0], a[1], flag(a[0]), false));
  for (size_t i = 1; i < values.size(); ++i) {
    KESTREL_ASSIGN_OR_RETURN(Value key, sort_key(in, values[i], a[1], flag(a[0]), false));
    KESTREL_ASSIGN_OR_RETURN(int order, compare(key, best_key, want_max ? ">" : "<"));
    if (want_max ? order > 0 : order < 0) {
      best = i;
      best_key = std::move(key);
    }
  }
  return values[best];
}

Result<Value> max_filter(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, true); }
Result<Value> min_filter(Interpreter& in, const Value& v, CallArgs& args) { return min_max(in, v, args, false); }

Result<Value> unique(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("unique", args, {"case_sensitive", "attribute"}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  std::vector<Value> seen, out;
  for (const Value& item : values) {
    KESTREL_ASSIGN_OR_RETURN(Value key, sort_key(in, item, a[1], flag(a[0]), false));
    if (key.kind() == Value::Kind::kList || key.is_mapping())
      return fail("unhashable type: '" + type_name(key) + "'");
    if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
      seen.push_back(key);
      out.push_back(item);
    }
  }
  return Value::iterator(std::move(out));
}

Result<Value> replace(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("replace", args, {"old", "new", "count"}));
  if (!a[0] || !a[1]) return fail("replace() needs the old and the new text");
  KESTREL_ASSIGN_OR_RETURN(int64_t count, integer_argument(a[2] && a[2]->is_none() ? std::nullopt : a[2], -1, "count"));
  return Value(py_replace(to_str(v), to_str(*a[0]), to_str(*a[1]), count));
}

Result<Value> reverse(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("reverse", args, {}));
  if (v.is_string()) {
    const std::string& s = v.as_string();
    const auto offsets = code_point_offsets(s);
    std::string out;
    for (size_t i = offsets.size() - 1; i > 0; --i) out += s.substr(offsets[i - 1], offsets[i] - offsets[i - 1]);
    return Value(std::move(out));
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  std::reverse(values.begin(), values.end());
  // reversed() of a sequence is an iterator; a generator is first copied into a list.
  if (v.kind() == Value::Kind::kIterator) return Value::list(std::move(values));
  return Value::iterator(std::move(values));
}

// Python's round(value, digits): correctly rounded, ties to even; ints stay ints.
Result<Value> round_filter(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("round", args, {"precision", "method"}));
  KESTREL_ASSIGN_OR_RETURN(int64_t precision, integer_argument(a[0], 0, "precision"));
  const std::string method = a[1] && a[1]->is_string() ? a[1]->as_string() : "common";
  if (method != "common" && method != "ceil" && method != "floor")
    return fail("method must be common, ceil or floor");
  if (!v.is_number()) return fail("type " + type_name(v) + " doesn't define __round__ method");
  if (precision < -300 || precision > 300) return fail("round() precision out of range");
  if (method == "common") {
    if (!v.is_float() && precision >= 0) return Value(v.as_int());
    const double x = v.as_float();
    if (!std::isfinite(x)) return Value(x);
    if (precision >= 0) {
      char buffer[512];
      std::snprintf(buffer, sizeof(buffer), "%.*f", static_cast<int>(std::min<int64_t>(precision, 100)), x);
      return Value(std::strtod(buffer, nullptr));
    }
    const double scale = std::pow(10.0, static_cast<double>(-precision));
    return Value(std::nearbyint(x / scale) * scale);
  }
  const double scale = std::pow(10.0, static_cast<double>(precision));
  const double scaled = v.as_float() * scale;
  return Value((method == "ceil" ? std::ceil(scaled) : std::floor(scaled)) / scale);
}

Result<Value> safe(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("safe", args, {}));
  return Value(to_str(v));
}

Result<Value> string(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("string", args, {}));
  return Value(to_str(v));
}

Result<Value> sum(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("sum", args, {"attribute", "start"}));
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> values, in.iterate(v));
  Value total = a[1] ? *a[1] : Value(int64_t{0});
  if (total.is_string()) return fail("sum() can't sum strings [use ''.join(seq) instead]");
  for (const Value& item : values) {
    Value term = item;
    if (a[0] && !a[0]->is_none()) {
      KESTREL_ASSIGN_OR_RETURN(term, lookup_path(in, item, *a[0], std::nullopt));
    }
    KESTREL_ASSIGN_OR_RETURN(total, in.binary_operation("+", total, term));
  }
  return total;
}

Result<Value> title(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("title", args, {}));
  // Jinja splits at runs of whitespace and - ( { [ <, then capitalizes each piece.
  const std::string text = to_str(v);
  std::string out;
  bool at_start = true;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    pos += length;
    const bool boundary = is_python_space(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
    if (boundary) {
      append_utf8(cp, out);
      at_start = true;
    } else {
      append_utf8(at_start ? upper_code_point(cp) : lower_code_point(cp), out);
      at_start = false;
    }
  }
  return Value(std::move(out));
}

Result<Value> tojson(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"}));
  JsonStyle style;
  style.ensure_ascii = flag(a[0]);
  if (a[1] && !a[1]->is_none()) {
    if (a[1]->is_string()) {
      style.indent = a[1]->as_string();
    } else if (a[1]->is_number() && !a[1]->is_float()) {
      style.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(a[1]->as_int(), 0, 64)), ' ');
    } else {
      return fail("tojson indent must be an integer or a string");
    }
    style.item_separator = ",";
  }
  if (a[2] && !a[2]->is_none()) {
    if (!a[2]->is_sequence() || a[2]->items().size() != 2 || !a[2]->items()[0].is_string() ||
        !a[2]->items()[1].is_string())
      return fail("tojson separators must be a pair of strings");
    style.item_separator = a[2]->items()[0].as_string();
    style.key_separator = a[2]->items()[1].as_string();
  }
  style.sort_keys = flag(a[3]);
  KESTREL_ASSIGN_OR_RETURN(std::string text, to_json_text(v, style));
  return Value(std::move(text));
}

Result<Value> trim(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("trim", args, {"chars"}));
  const std::string text = to_str(v);
  if (a[0] && !a[0]->is_none()) {
    if (!a[0]->is_string()) return fail("strip arg must be None or str");
    return Value(std::string(strip(text, a[0]->as_string(), false, true, true)));
  }
  return Value(std::string(strip(text, "", true, true, true)));
}

Result<Value> wordcount(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Slots a, bind_arguments("wordcount", args, {}));
  const std::string text = to_str(v);
  int64_t words = 0;
  bool in_word = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    pos += length;
    const bool word_char = is_alnum(cp) || cp == '_';
    if (word_char && !in_word) ++words;
    in_word = word_char;
  }
  return Value(words);
}

Result<Value> format(Interpreter& in, const Value& v, CallArgs& args) {
  if (!args.positional.empty() && !args.keyword.empty())
    return fail("can't handle positional and keyword arguments at the same time");
  Value operands;
  if (!args.keyword.empty()) {
    std::vector<std::pair<Value, Value>> entries;
    for (auto& [name, value] : args.keyword) entries.emplace_back(Value(name), value);
    operands = Value::dict(std::move(entries));
  } else {
    operands = Value::tuple(args.positional);
  }
  return in.percent_format(Value(to_str(v)), operands);
}

struct FilterEntry {
  std::string_view name;
  FilterFunction function;
};

constexpr FilterEntry kFilters[] = {
    {"abs", abs_filter},   {"capitalize", capitalize}, {"center", center},     {"count", length},
    {"d", default_filter}, {"default", default_filter}, {"dictsort", dictsort}, {"e", escape},
    {"escape", escape},    {"first", first},           {"float", float_filter}, {"format", format},
    {"indent", indent},    {"int", int_filter},        {"items", items},       {"join", join},
    {"last", last},        {"length", length},         {"list", list},         {"lower", lower},
    {"map", map},          {"max", max_filter},        {"min", min_filter},    {"reject", reject},
    {"rejectattr", rejectattr}, {"replace", replace},  {"reverse", reverse},   {"round", round_filter},
    {"safe", safe},        {"select", select},         {"selectattr", selectattr}, {"sort", sort},
    {"string", string},    {"sum", sum},               {"title", title},       {"tojson", tojson},
    {"trim", trim},        {"unique", unique},         {"upper", upper},       {"wordcount", wordcount},
};

constexpr std::string_view kUnsupportedFilters[] = {
    "attr", "batch", "filesizeformat", "forceescape", "groupby", "pprint", "random", "slice",
    "striptags", "truncate", "urlencode", "urlize", "wordwrap", "xmlattr"};

}  // namespace

FilterFunction find_filter(std::string_view name) {
  for (const FilterEntry& entry : kFilters)
    if (entry.name == name) return entry.function;
  return nullptr;
}

bool is_filter(std::string_view name) { return find_filter(name) != nullptr; }

bool is_unsupported_filter(std::string_view name) {
  return std::find(std::begin(kUnsupportedFilters), std::end(kUnsupportedFilters), name) !=
         std::end(kUnsupportedFilters);
}

}  // namespace kestrel::jinja
