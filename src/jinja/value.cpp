#include "jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <nlohmann/json.hpp>

#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

template <typename Items>
void measure(const Items& children, int& nesting, bool& holds_namespace) {
  int deepest = 0;
  for (const Value& child : children) {
    deepest = std::max(deepest, child.nesting());
    holds_namespace = holds_namespace || child.holds_namespace();
  }
  nesting = deepest + 1;
}

std::vector<Value> values_of(const std::vector<std::pair<Value, Value>>& entries) {
  std::vector<Value> values;
  values.reserve(entries.size() * 2);
  for (const auto& [key, value] : entries) {
    values.push_back(key);
    values.push_back(value);
  }
  return values;
}

bool is_printable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp >= 0x80 && cp <= 0xA0) return false;
  if (cp == 0xAD || cp == 0x1680 || cp == 0x3000 || cp == 0xFEFF) return false;
  if (cp >= 0x2000 && cp <= 0x200F) return false;
  if (cp >= 0x2028 && cp <= 0x202F) return false;
  if (cp >= 0x205F && cp <= 0x206F) return false;
  if (cp >= 0xD800 && cp <= 0xF8FF) return false;  // surrogates and private use
  return true;
}

std::string repr_string(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t pos = 0; pos < s.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(s, pos, &length);
    pos += length;
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (is_printable(cp)) {
      append_utf8(cp, out);
    } else if (cp < 0x100) {
      out += fmt::format("\\x{:02x}", cp);
    } else if (cp < 0x10000) {
      out += fmt::format("\\u{:04x}", cp);
    } else {
      out += fmt::format("\\U{:08x}", cp);
    }
  }
  out += quote;
  return out;
}

std::string repr_items(const std::vector<Value>& items, const char* open, const char* close, bool tuple) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_repr(items[i]);
  }
  if (tuple && items.size() == 1) out += ",";
  return out + close;
}

std::string repr_entries(const std::vector<std::pair<Value, Value>>& entries) {
  std::string out = "{";
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out += ", ";
    out += to_repr(entries[i].first) + ": " + to_repr(entries[i].second);
  }
  return out + "}";
}

void append_json_string(const std::string& s, bool ensure_ascii, std::string& out) {
  out += '"';
  for (size_t pos = 0; pos < s.size(); ++pos) {
    const char c = s[pos];
    if (ensure_ascii && static_cast<uint8_t>(c) >= 0x80) {
      size_t length = 0;
      uint32_t cp = decode_at(s, pos, &length);
      pos += length - 1;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        out += fmt::format("\\u{:04x}", cp);
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<uint8_t>(c) < 0x20) out += fmt::format("\\u{:04x}", static_cast<unsigned>(c));
        else out += c;
    }
  }
  out += '"';
}

std::string json_float(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  return format_float(value);
}

Result<std::string> json_key(const Value& key) {
  switch (key.kind()) {
    case Value::Kind::kString: return key.as_string();
    case Value::Kind::kBool: return std::string(key.as_bool() ? "true" : "false");
    case Value::Kind::kInt: return std::to_string(key.as_int());
    case Value::Kind::kFloat: return json_float(key.as_float());
    case Value::Kind::kNone: return std::string("null");
    default:
      return make_error(ErrorCode::kInvalidArgument, "tojson: keys must be str, int, float, bool or None, not {}",
                        type_name(key));
  }
}

Status append_json(const Value& value, const JsonStyle& style, int level, std::string& out) {
  const auto newline = [&](int depth) {
    if (!style.indent) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += *style.indent;
  };
  switch (value.kind()) {
    case Value::Kind::kNone: out += "null"; return ok_status();
    case Value::Kind::kBool: out += value.as_bool() ? "true" : "false"; return ok_status();
    case Value::Kind::kInt: out += std::to_string(value.as_int()); return ok_status();
    case Value::Kind::kFloat: out += json_float(value.as_float()); return ok_status();
    case Value::Kind::kString: append_json_string(value.as_string(), style.ensure_ascii, out); return ok_status();
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const auto& items = value.items();
      if (items.empty()) {
        out += "[]";
        return ok_status();
      }
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) out += style.item_separator;
        newline(level + 1);
        KESTREL_RETURN_IF_ERROR(append_json(items[i], style, level + 1, out));
      }
      newline(level);
      out += ']';
      return ok_status();
    }
    case Value::Kind::kDict: {
      std::vector<std::pair<std::string, const Value*>> members;
      for (const auto& [key, member] : value.entries()) {
        KESTREL_ASSIGN_OR_RETURN(std::string name, json_key(key));
        members.emplace_back(std::move(name), &member);
      }
      if (style.sort_keys)
        std::stable_sort(members.begin(), members.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      if (members.empty()) {
        out += "{}";
        return ok_status();
      }
      out += '{';
      for (size_t i = 0; i < members.size(); ++i) {
        if (i > 0) out += style.item_separator;
        newline(level + 1);
        append_json_string(members[i].first, style.ensure_ascii, out);
        out += style.key_separator;
        KESTREL_RETURN_IF_ERROR(append_json(*members[i].second, style, level + 1, out));
      }
      newline(level);
      out += '}';
      return ok_status();
    }
    default:
      return make_error(ErrorCode::kInvalidArgument, "tojson: object of type {} is not JSON serializable",
                        type_name(value));
  }
}

int compare_numbers(const Value& a, const Value& b) {
  if (!a.is_float() && !b.is_float()) {
    const int64_t x = a.as_int(), y = b.as_int();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  const double x = a.as_float(), y = b.as_float();
  return x < y ? -1 : x > y ? 1 : 0;
}

}  // namespace

Value Value::undefined(std::string hint) {
  Value v;
  v.payload_ = std::move(hint);
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value Value::list(std::vector<Value> items) {
  auto data = std::make_shared<ListData>();
  measure(items, data->nesting, data->holds_namespace);
  data->items = std::move(items);
  Value v;
  v.kind_ = Kind::kList;
  v.payload_ = std::move(data);
  return v;
}

Value Value::tuple(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::iterator(std::vector<Value> items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kIterator;
  return v;
}

Value Value::dict(std::vector<std::pair<Value, Value>> entries) {
  auto data = std::make_shared<DictData>();
  measure(values_of(entries), data->nesting, data->holds_namespace);
  data->entries = std::move(entries);
  Value v;
  v.kind_ = Kind::kDict;
  v.payload_ = std::move(data);
  return v;
}

Value Value::namespace_object(std::vector<std::pair<Value, Value>> entries) {
  Value v = dict(std::move(entries));
  v.kind_ = Kind::kNamespace;
  return v;
}

Value Value::callable(std::string name, NativeFunction function) {
  Value v;
  v.kind_ = Kind::kCallable;
  v.payload_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(function)});
  return v;
}

double Value::as_float() const {
  if (kind_ == Kind::kFloat) return std::get<double>(payload_);
  return static_cast<double>(as_int());
}

const std::vector<Value>& Value::items() const { return std::get<std::shared_ptr<ListData>>(payload_)->items; }

const std::vector<std::pair<Value, Value>>& Value::entries() const {
  return std::get<std::shared_ptr<DictData>>(payload_)->entries;
}

const std::string& Value::undefined_hint() const {
  static const std::string kDefault = "value is undefined";
  if (const auto* hint = std::get_if<std::string>(&payload_)) return *hint;
  return kDefault;
}

int Value::nesting() const {
  if (const auto* list = std::get_if<std::shared_ptr<ListData>>(&payload_)) return (*list)->nesting;
  if (const auto* dict = std::get_if<std::shared_ptr<DictData>>(&payload_)) return (*dict)->nesting;
  return 0;
}

bool Value::holds_namespace() const {
  // Functions may capture values (bound methods), so they count as holding one.
  if (kind_ == Kind::kNamespace || kind_ == Kind::kCallable) return true;
  if (const auto* list = std::get_if<std::shared_ptr<ListData>>(&payload_)) return (*list)->holds_namespace;
  if (const auto* dict = std::get_if<std::shared_ptr<DictData>>(&payload_)) return (*dict)->holds_namespace;
  return false;
}

const Value* Value::find(const Value& key) const {
  for (const auto& [k, v] : entries())
    if (equals(k, key)) return &v;
  return nullptr;
}

void Value::set_attribute(const std::string& name, Value value) const {
  auto& data = *std::get<std::shared_ptr<DictData>>(payload_);
  bool found = false;
  for (auto& [k, v] : data.entries) {
    if (k.is_string() && k.as_string() == name) {
      v = std::move(value);
      found = true;
      break;
    }
  }
  if (!found) data.entries.emplace_back(Value(name), std::move(value));
  bool ignored = false;
  measure(values_of(data.entries), data.nesting, ignored);
}

bool Value::consume_iterator() const {
  auto& data = *std::get<std::shared_ptr<ListData>>(payload_);
  const bool was_consumed = data.consumed;
  data.consumed = true;
  return !was_consumed;
}

bool truthy(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return false;
    case Value::Kind::kBool: return value.as_bool();
    case Value::Kind::kInt: return value.as_int() != 0;
    case Value::Kind::kFloat: return value.as_float() != 0.0;
    case Value::Kind::kString: return !value.as_string().empty();
    case Value::Kind::kList:
    case Value::Kind::kTuple: return !value.items().empty();
    case Value::Kind::kDict: return !value.entries().empty();
    default: return true;  // namespaces, iterators and callables
  }
}

std::string format_float(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's repr layout: fixed for exponents in [-4, 16).
  char buffer[64];
  const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value, std::chars_format::scientific);
  const std::string text(buffer, result.ptr);
  const size_t e = text.find('e');
  std::string mantissa = text.substr(0, e);
  const int exponent = std::stoi(text.substr(e + 1));
  const bool negative = !mantissa.empty() && mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else {
      const auto integer_digits = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= integer_digits) {
        out += digits + std::string(integer_digits - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, integer_digits) + "." + digits.substr(integer_digits);
      }
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += fmt::format(".{}", digits.substr(1));
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

std::string to_str(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kString: return value.as_string();
    default: return to_repr(value);
  }
}

std::string to_repr(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return value.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(value.as_int());
    case Value::Kind::kFloat: return format_float(value.as_float());
    case Value::Kind::kString: return repr_string(value.as_string());
    case Value::Kind::kList: return repr_items(value.items(), "[", "]", false);
    case Value::Kind::kTuple: return repr_items(value.items(), "(", ")", true);
    case Value::Kind::kIterator: return "<generator object>";
    case Value::Kind::kDict: return repr_entries(value.entries());
    case Value::Kind::kNamespace: return "<Namespace " + repr_entries(value.entries()) + ">";
    case Value::Kind::kCallable: return "<function " + value.as_callable().name + ">";
  }
  return "";
}

std::string type_name(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kUndefined: return "Undefined";
    case Value::Kind::kNone: return "NoneType";
    case Value::Kind::kBool: return "bool";
    case Value::Kind::kInt: return "int";
    case Value::Kind::kFloat: return "float";
    case Value::Kind::kString: return "str";
    case Value::Kind::kList: return "list";
    case Value::Kind::kTuple: return "tuple";
    case Value::Kind::kIterator: return "generator";
    case Value::Kind::kDict: return "dict";
    case Value::Kind::kNamespace: return "Namespace";
    case Value::Kind::kCallable: return "function";
  }
  return "object";
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) == 0;
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList:
    case Value::Kind::kTuple: {
      const auto &x = a.items(), &y = b.items();
      if (x.size() != y.size()) return false;
      for (size_t i = 0; i < x.size(); ++i)
        if (!equals(x[i], y[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      if (a.entries().size() != b.entries().size()) return false;
      for (const auto& [key, value] : a.entries()) {
        const Value* other = b.find(key);
        if (other == nullptr || !equals(value, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kNamespace: return &a.entries() == &b.entries();
    case Value::Kind::kIterator: return &a.items() == &b.items();
    case Value::Kind::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

Result<int> compare(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined() || b.is_undefined())
    return make_error(ErrorCode::kInvalidArgument, "{}", (a.is_undefined() ? a : b).undefined_hint());
  if (a.is_number() && b.is_number()) return compare_numbers(a, b);
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.kind() == b.kind() && a.is_sequence()) {
    const auto &x = a.items(), &y = b.items();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (equals(x[i], y[i])) continue;
      return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  return make_error(ErrorCode::kInvalidArgument, "'{}' not supported between instances of '{}' and '{}'", op,
                    type_name(a), type_name(b));
}

namespace {

Result<Value> from_json_at(const nlohmann::ordered_json& json, const std::string& what, int depth) {
  if (depth > kMaxNesting)
    return make_error(ErrorCode::kInvalidArgument, "{} nests deeper than {} levels", what, kMaxNesting);
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const auto u = json.get<uint64_t>();
      if (u <= static_cast<uint64_t>(INT64_MAX)) return Value(static_cast<int64_t>(u));
      return Value(static_cast<double>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) {
        KESTREL_ASSIGN_OR_RETURN(Value v, from_json_at(item, what, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::list(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      std::vector<std::pair<Value, Value>> entries;
      entries.reserve(json.size());
      for (const auto& [key, member] : json.items()) {
        KESTREL_ASSIGN_OR_RETURN(Value v, from_json_at(member, what, depth + 1));
        entries.emplace_back(Value(key), std::move(v));
      }
      return Value::dict(std::move(entries));
    }
    default:
      return make_error(ErrorCode::kInvalidArgument, "{} holds a JSON value of type {}, which templates cannot use",
                        what, json.type_name());
  }
}

}  // namespace

Result<Value> from_json(const nlohmann::ordered_json& json, const std::string& what) {
  return from_json_at(json, what, 1);
}

Result<std::string> to_json_text(const Value& value, const JsonStyle& style) {
  std::string out;
  KESTREL_RETURN_IF_ERROR(append_json(value, style, 0, out));
  return out;
}

}  // namespace kestrel::jinja
