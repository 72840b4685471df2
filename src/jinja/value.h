// The template engine's values: Python's types as Jinja templates see them (internal).
//
// Lists, dicts and namespaces are shared by reference like Python objects; lists and dicts are
// immutable (as in Jinja's immutable sandbox), namespaces take attribute assignment. Dicts keep
// insertion order. "Iterators" stand for the generators that filters such as map and select
// return: always true, no length, and used up by the first iteration.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "kestrel/core/result.h"

namespace kestrel::jinja {

class Value;
class Interpreter;

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
};

using NativeFunction = std::function<Result<Value>(Interpreter&, CallArgs&)>;

struct ListData;
struct DictData;
struct Callable {
  std::string name;
  NativeFunction function;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kIterator, kDict, kNamespace, kCallable };

  Value() : kind_(Kind::kUndefined) {}  // undefined
  static Value undefined(std::string hint);
  static Value none();
  Value(bool b) : kind_(Kind::kBool), payload_(b) {}             // NOLINT
  Value(int64_t i) : kind_(Kind::kInt), payload_(i) {}           // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}               // NOLINT
  Value(double f) : kind_(Kind::kFloat), payload_(f) {}          // NOLINT
  Value(std::string s) : kind_(Kind::kString), payload_(std::move(s)) {}  // NOLINT
  Value(const char* s) : Value(std::string(s)) {}                // NOLINT
  static Value list(std::vector<Value> items);
  static Value tuple(std::vector<Value> items);
  static Value iterator(std::vector<Value> items);
  static Value dict(std::vector<std::pair<Value, Value>> items = {});
  static Value namespace_object(std::vector<std::pair<Value, Value>> items = {});
  static Value callable(std::string name, NativeFunction function);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool; }
  bool is_string() const { return kind_ == Kind::kString; }
  // A list or a tuple (a Python sequence with a length and indices).
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }
  bool is_mapping() const { return kind_ == Kind::kDict || kind_ == Kind::kNamespace; }
  bool is_callable() const { return kind_ == Kind::kCallable; }

  bool as_bool() const { return std::get<bool>(payload_); }
  int64_t as_int() const { return kind_ == Kind::kBool ? std::get<bool>(payload_) : std::get<int64_t>(payload_); }
  double as_float() const;  // ints and bools convert
  const std::string& as_string() const { return std::get<std::string>(payload_); }
  const std::vector<Value>& items() const;  // list, tuple or iterator
  const std::vector<std::pair<Value, Value>>& entries() const;  // dict or namespace
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(payload_); }
  // For undefined values: what to say when it is used ("'x' is undefined").
  const std::string& undefined_hint() const;

  // Containers nested inside this value, counting itself (0 for scalars). Bounded by the
  // interpreter so that recursive walks and destruction stay shallow.
  int nesting() const;
  // Whether this value is or contains a namespace or a function (which may capture one).
  // Namespaces never hold such values, so the mutable objects can form no reference cycle.
  bool holds_namespace() const;

  // Dict lookup by Python equality; null when absent.
  const Value* find(const Value& key) const;
  // Namespaces only: assigns an attribute (the caller checks !value.holds_namespace()).
  void set_attribute(const std::string& name, Value value) const;
  // Iterators: marks the generator as used up (the next iteration yields nothing).
  bool consume_iterator() const;

 private:
  Kind kind_;
  std::variant<std::monostate, bool, int64_t, double, std::string, std::shared_ptr<ListData>,
               std::shared_ptr<DictData>, std::shared_ptr<const Callable>>
      payload_;
};

struct ListData {
  std::vector<Value> items;
  int nesting = 1;
  bool holds_namespace = false;
  bool consumed = false;  // iterators only
};
struct DictData {
  std::vector<std::pair<Value, Value>> entries;
  int nesting = 1;
  bool holds_namespace = false;
};

// Python's truth value.
bool truthy(const Value& value);
// Python's str(); undefined renders as "".
std::string to_str(const Value& value);
// Python's repr().
std::string to_repr(const Value& value);
// Python's type name, for messages ("str", "int", "NoneType", "list", "dict", ...).
std::string type_name(const Value& value);
// Python's float repr: "1.0", "0.1", "1e+16", "inf".
std::string format_float(double value);
// Python's ==.
bool equals(const Value& a, const Value& b);
// Python's ordering (<0, 0, >0); an error for values Python cannot order ("'<' not supported
// between instances of 'str' and 'int'"). `op` names the operator in that message.
Result<int> compare(const Value& a, const Value& b, const char* op = "<");

// Containers may nest this deep (Python's own recursion limit is about 1000).
inline constexpr int kMaxNesting = 256;

// JSON (objects keep their member order) to a value; deeper nesting than kMaxNesting is an
// error naming `what`.
Result<Value> from_json(const nlohmann::ordered_json& json, const std::string& what);

// json.dumps(value, ensure_ascii=False, indent=..., separators=..., sort_keys=...), as
// transformers' tojson filter calls it.
struct JsonStyle {
  std::optional<std::string> indent;  // nullopt: one line
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;  // escape non-ASCII as \uXXXX (surrogate pairs above U+FFFF)
};
Result<std::string> to_json_text(const Value& value, const JsonStyle& style);

}  // namespace kestrel::jinja
