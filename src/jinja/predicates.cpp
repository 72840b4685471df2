// Jinja's tests: the names after "is" (x is defined, x is divisibleby 3, ...).
#include <algorithm>
#include <cmath>

#include "jinja/builtins.h"
#include "jinja/interpreter.h"
#include "jinja/text.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

// One required argument ("other"), as the comparison tests take.
Result<Value> other_argument(const char* test, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(test, args, {"other"}));
  if (!a[0]) return fail(std::string(test) + "() missing 1 required positional argument");
  return *a[0];
}

Status no_arguments(const char* test, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments(test, args, {}));
  return ok_status();
}

// Defines `name_test`, the Jinja test `name` (suffixed: some names are C++ keywords).
#define KESTREL_SIMPLE_TEST(name, expression)                            \
  Result<bool> name##_test(Interpreter&, const Value& v, CallArgs& args) { \
    KESTREL_RETURN_IF_ERROR(no_arguments(#name, args));                  \
    return (expression);                                                 \
  }

KESTREL_SIMPLE_TEST(defined, !v.is_undefined())
KESTREL_SIMPLE_TEST(undefined, v.is_undefined())
KESTREL_SIMPLE_TEST(none, v.is_none())
KESTREL_SIMPLE_TEST(boolean, v.is_bool())
KESTREL_SIMPLE_TEST(false, v.is_bool() && !v.as_bool())
KESTREL_SIMPLE_TEST(true, v.is_bool() && v.as_bool())
KESTREL_SIMPLE_TEST(integer, v.is_int())
KESTREL_SIMPLE_TEST(float, v.is_float())
KESTREL_SIMPLE_TEST(string, v.is_string())
KESTREL_SIMPLE_TEST(mapping, v.kind() == Value::Kind::kDict)
KESTREL_SIMPLE_TEST(number, v.is_number())
// Python: has len() and __getitem__ (Jinja's Undefined has both).
KESTREL_SIMPLE_TEST(sequence, v.is_sequence() || v.is_string() || v.kind() == Value::Kind::kDict || v.is_undefined())
KESTREL_SIMPLE_TEST(iterable, v.is_sequence() || v.is_string() || v.kind() == Value::Kind::kDict ||
                                  v.kind() == Value::Kind::kIterator || v.is_undefined())
KESTREL_SIMPLE_TEST(callable, v.is_callable() || v.is_undefined())
KESTREL_SIMPLE_TEST(escaped, false)

#undef KESTREL_SIMPLE_TEST

Result<bool> lower_test(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("lower", args));
  return py_is_cased(to_str(v), false);
}

Result<bool> upper_test(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("upper", args));
  return py_is_cased(to_str(v), true);
}

Result<bool> remainder_is(Interpreter& in, const Value& v, const Value& divisor, int64_t expected) {
  KESTREL_ASSIGN_OR_RETURN(Value r, in.binary_operation("%", v, divisor));
  return equals(r, Value(expected));
}

Result<bool> odd(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("odd", args));
  return remainder_is(in, v, Value(int64_t{2}), 1);
}

Result<bool> even(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("even", args));
  return remainder_is(in, v, Value(int64_t{2}), 0);
}

Result<bool> divisibleby(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(auto a, bind_arguments("divisibleby", args, {"num"}));
  if (!a[0]) return fail("divisibleby() missing 1 required positional argument: 'num'");
  return remainder_is(in, v, *a[0], 0);
}

Result<bool> sameas(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Value other, other_argument("sameas", args));
  if (v.kind() != other.kind()) return false;
  if (v.is_sequence() || v.is_mapping() || v.kind() == Value::Kind::kIterator)
    return v.is_mapping() ? &v.entries() == &other.entries() : &v.items() == &other.items();
  return equals(v, other);
}

Result<bool> in_test(Interpreter& in, const Value& v, CallArgs& args) {
  KESTREL_ASSIGN_OR_RETURN(Value seq, other_argument("in", args));
  return in.contains(seq, v);
}

Result<bool> filter_exists(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("filter", args));
  return v.is_string() && is_filter(v.as_string());
}

Result<bool> test_exists(Interpreter&, const Value& v, CallArgs& args) {
  KESTREL_RETURN_IF_ERROR(no_arguments("test", args));
  return v.is_string() && is_test(v.as_string());
}

template <int Op>  // 0 ==, 1 !=, 2 >, 3 >=, 4 <, 5 <=
Result<bool> comparison(Interpreter&, const Value& v, CallArgs& args) {
  static constexpr const char* kNames[] = {"==", "!=", ">", ">=", "<", "<="};
  KESTREL_ASSIGN_OR_RETURN(Value other, other_argument(kNames[Op], args));
  if (Op == 0) return equals(v, other);
  if (Op == 1) return !equals(v, other);
  KESTREL_ASSIGN_OR_RETURN(int order, compare(v, other, kNames[Op]));
  switch (Op) {
    case 2: return order > 0;
    case 3: return order >= 0;
    case 4: return order < 0;
    default: return order <= 0;
  }
}

struct TestEntry {
  std::string_view name;
  TestFunction function;
};

constexpr TestEntry kTests[] = {
    {"odd", odd}, {"even", even}, {"divisibleby", divisibleby}, {"defined", defined_test},
    {"undefined", undefined_test}, {"filter", filter_exists}, {"test", test_exists}, {"none", none_test},
    {"boolean", boolean_test}, {"false", false_test}, {"true", true_test}, {"integer", integer_test},
    {"float", float_test}, {"lower", lower_test}, {"upper", upper_test}, {"string", string_test},
    {"mapping", mapping_test}, {"number", number_test}, {"sequence", sequence_test}, {"iterable", iterable_test},
    {"callable", callable_test}, {"sameas", sameas}, {"escaped", escaped_test}, {"in", in_test},
    {"==", comparison<0>}, {"eq", comparison<0>}, {"equalto", comparison<0>}, {"!=", comparison<1>},
    {"ne", comparison<1>}, {">", comparison<2>}, {"gt", comparison<2>}, {"greaterthan", comparison<2>},
    {">=", comparison<3>}, {"ge", comparison<3>}, {"<", comparison<4>}, {"lt", comparison<4>},
    {"lessthan", comparison<4>}, {"<=", comparison<5>}, {"le", comparison<5>},
};

}  // namespace

TestFunction find_test(std::string_view name) {
  for (const TestEntry& entry : kTests)
    if (entry.name == name) return entry.function;
  return nullptr;
}

bool is_test(std::string_view name) { return find_test(name) != nullptr; }

}  // namespace kestrel::jinja
