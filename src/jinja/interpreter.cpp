#include "jinja/interpreter.h"

#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/unicode.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

Error type_error(const std::string& message) { return Error(ErrorCode::kInvalidArgument, message); }

// "'dict object'", "'None'": how Jinja names an object in "has no attribute" messages.
std::string object_label(const Value& value) {
  if (value.is_none()) return "'None'";
  return fmt::format("'{} object'", type_name(value));
}

Value missing_attribute(const Value& object, const std::string& name) {
  return Value::undefined(object_label(object) + " has no attribute '" + name + "'");
}

Value missing_item(const Value& object, const Value& key) {
  if (key.is_string()) return missing_attribute(object, key.as_string());
  return Value::undefined(object_label(object) + " has no element " + to_repr(key));
}

bool hashable(const Value& value) {
  switch (value.kind()) {
    case Value::Kind::kList:
    case Value::Kind::kDict:
    case Value::Kind::kNamespace: return false;
    case Value::Kind::kTuple:
      for (const Value& item : value.items())
        if (!hashable(item)) return false;
      return true;
    default: return true;
  }
}

Result<int64_t> checked(bool overflow, int64_t value) {
  if (overflow) return type_error("integer overflow (values beyond 64 bits are not supported)");
  return value;
}

// Python's % on numbers: the result takes the sign of the divisor.
double python_fmod(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// One %-conversion of Python's printf-style formatting.
struct FormatSpec {
  std::string flags;
  int width = -1;
  int precision = -1;
  char conversion = 's';
};

Result<std::string> format_one(const FormatSpec& spec, const Value& arg) {
  const char c = spec.conversion;
  std::string body;
  if (c == 's' || c == 'r' || c == 'a') {
    body = c == 's' ? to_str(arg) : to_repr(arg);
    if (spec.precision >= 0) {
      const auto offsets = code_point_offsets(body);
      if (static_cast<size_t>(spec.precision) + 1 < offsets.size()) body.resize(offsets[spec.precision]);
    }
  } else if (c == 'c') {
    if (arg.is_string() && code_point_count(arg.as_string()) == 1) body = arg.as_string();
    else if (arg.is_int() && arg.as_int() >= 0 && arg.as_int() <= 0x10FFFF)
      append_utf8(static_cast<uint32_t>(arg.as_int()), body);
    else return type_error("%c requires an int or a single character");
  } else {
    if (!arg.is_number())
      return type_error(fmt::format("%{} format: a real number is required, not {}", c, type_name(arg)));
    std::string printf_spec = "%" + spec.flags;
    if (spec.width >= 0) printf_spec += std::to_string(spec.width);
    if (spec.precision >= 0) printf_spec += "." + std::to_string(spec.precision);
    char buffer[512];
    if (c == 'd' || c == 'i' || c == 'u' || c == 'x' || c == 'X' || c == 'o') {
      const auto value = arg.is_float() ? static_cast<long long>(std::trunc(arg.as_float()))
                                        : static_cast<long long>(arg.as_int());
      const char conv = c == 'i' || c == 'u' ? 'd' : c;
      if ((conv == 'x' || conv == 'X' || conv == 'o') && value < 0) {
        printf_spec += "ll";
        printf_spec += conv;
        std::snprintf(buffer, sizeof(buffer), printf_spec.c_str(), static_cast<unsigned long long>(-value));
        body = buffer;
        const size_t digit = body.find_first_not_of(' ');
        body.insert(digit == std::string::npos ? 0 : digit, "-");
      } else {
        printf_spec += "ll";
        printf_spec += conv;
        std::snprintf(buffer, sizeof(buffer), printf_spec.c_str(), value);
        body = buffer;
      }
      return body;
    }
    if (c == 'f' || c == 'F' || c == 'e' || c == 'E' || c == 'g' || c == 'G') {
      if (spec.precision > 100 || spec.width > 400) return type_error("format width or precision too large");
      printf_spec += c;
      std::snprintf(buffer, sizeof(buffer), printf_spec.c_str(), arg.as_float());
      return std::string(buffer);
    }
    return type_error(fmt::format("unsupported format character '{}'", c));
  }
  const auto length = static_cast<int>(code_point_count(body));
  if (spec.width > length) {
    const std::string pad(static_cast<size_t>(spec.width - length), ' ');
    body = spec.flags.find('-') != std::string::npos ? body + pad : pad + body;
  }
  return body;
}

}  // namespace

// ---- Scope --------------------------------------------------------------------------------

const Value* Scope::find(const std::string& name) const {
  for (const Scope* scope = this; scope != nullptr; scope = scope->parent_.get())
    for (const auto& [key, value] : scope->variables_)
      if (key == name) return &value;
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [key, existing] : variables_)
    if (key == name) {
      existing = std::move(value);
      return;
    }
  variables_.emplace_back(name, std::move(value));
}

// ---- Interpreter: statements ---------------------------------------------------------------

Interpreter::Interpreter(const SourceMap& map, const RenderOptions& options) : map_(map), options_(options) {}

Result<std::string> Interpreter::render(const Body& body, const Value& context) {
  auto globals = std::make_shared<Scope>(nullptr);
  for (auto& [name, function] : global_functions()) globals->set(name, std::move(function));
  auto variables = std::make_shared<Scope>(globals);
  for (const auto& [key, value] : context.entries()) variables->set(key.as_string(), value);
  scope_ = std::make_shared<Scope>(variables);
  std::string out;
  KESTREL_ASSIGN_OR_RETURN(Flow flow, exec_body(body, out));
  (void)flow;
  return out;
}

namespace {

// Work units for a value a filter or call produced: list items and 16-byte chunks of text.
size_t data_size(const Value& value) {
  if (value.is_string()) return value.as_string().size() / 16;
  if (value.is_sequence() || value.kind() == Value::Kind::kIterator) return value.items().size();
  if (value.is_mapping()) return value.entries().size();
  return 0;
}

}  // namespace

Status Interpreter::charge(size_t units) {
  steps_ += static_cast<int64_t>(std::min<size_t>(units, static_cast<size_t>(INT64_MAX / 4)));
  if (steps_ > options_.max_steps)
    return type_error(fmt::format("rendering takes more than {} steps (an endless or very long loop?)",
                                  options_.max_steps));
  return ok_status();
}

Status Interpreter::check_size(size_t size) const {
  if (size > static_cast<size_t>(options_.max_output_bytes))
    return make_error(ErrorCode::kCapacity, "the template builds text or a list larger than the limit of {} bytes",
                      options_.max_output_bytes);
  return ok_status();
}

std::time_t Interpreter::now() const { return options_.now ? *options_.now : std::time(nullptr); }

Error Interpreter::locate(const Error& error, size_t offset) {
  if (located_) return error;
  located_ = true;
  return Error(error.code(), describe_position(map_, offset) + ": " + error.message());
}

Status Interpreter::append(std::string& out, std::string_view text) {
  KESTREL_RETURN_IF_ERROR(check_size(out.size() + text.size()));
  out += text;
  return ok_status();
}

Result<Interpreter::Flow> Interpreter::exec_body(const Body& body, std::string& out) {
  for (const NodePtr& node : body) {
    KESTREL_ASSIGN_OR_RETURN(Flow flow, exec(*node, out));
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec(const Node& node, std::string& out) {
  if (auto s = step(); !s.ok()) return locate(s.error(), node.offset);
  auto fail = [&](const Error& e) { return locate(e, node.offset); };
  switch (node.kind) {
    case Node::Kind::kText:
      if (auto s = append(out, node.text); !s.ok()) return fail(s.error());
      return Flow::kNormal;
    case Node::Kind::kOutput: {
      KESTREL_ASSIGN_OR_RETURN(Value value, eval(*node.expr));
      if (auto s = append(out, to_str(value)); !s.ok()) return fail(s.error());
      return Flow::kNormal;
    }
    case Node::Kind::kIf:
      for (const Branch& branch : node.branches) {
        KESTREL_ASSIGN_OR_RETURN(Value test, eval(*branch.test));
        if (truthy(test)) return exec_body(branch.body, out);
      }
      return exec_body(node.else_body, out);
    case Node::Kind::kFor: return exec_for(node, out);
    case Node::Kind::kSet: {
      KESTREL_ASSIGN_OR_RETURN(Value value, eval(*node.expr));
      if (auto s = assign(node.target, value, node.offset); !s.ok()) return fail(s.error());
      return Flow::kNormal;
    }
    case Node::Kind::kSetBlock:
    case Node::Kind::kFilterBlock: {
      std::string text;
      KESTREL_ASSIGN_OR_RETURN(Flow flow, exec_body(node.body, text));
      Value value(std::move(text));
      if (node.expr) {
        // The filter chain's innermost operand is the rendered block.
        std::vector<const Expr*> chain;
        for (const Expr* e = node.expr.get(); e != nullptr; e = e->args[0].get()) chain.push_back(e);
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
          KESTREL_ASSIGN_OR_RETURN(CallArgs args, eval_args(**it, 1));
          auto filtered = apply_filter((*it)->name, value, args);
          if (!filtered.ok()) return locate(filtered.error(), (*it)->offset);
          value = std::move(filtered).value();
        }
      }
      if (node.kind == Node::Kind::kFilterBlock) {
        if (auto s = append(out, to_str(value)); !s.ok()) return fail(s.error());
      } else if (auto s = assign(node.target, value, node.offset); !s.ok()) {
        return fail(s.error());
      }
      return flow;
    }
    case Node::Kind::kMacro: {
      const Node* macro = &node;
      std::weak_ptr<Scope> defined_in = scope_;
      scope_->set(node.text, Value::callable(node.text, [macro, defined_in](Interpreter& in, CallArgs& args) {
                    const auto scope = defined_in.lock();
                    if (!scope)
                      return Result<Value>(type_error("macro '" + macro->text + "' is called after the block that "
                                                      "defined it has ended"));
                    return in.call_macro(*macro, scope, args);
                  }));
      return Flow::kNormal;
    }
    case Node::Kind::kWith: {
      auto inner = std::make_shared<Scope>(scope_);
      for (const Param& param : node.params) {
        KESTREL_ASSIGN_OR_RETURN(Value value, eval(*param.value));
        inner->set(param.name, std::move(value));
      }
      auto outer = std::exchange(scope_, inner);
      auto flow = exec_body(node.body, out);
      scope_ = std::move(outer);
      return flow;
    }
    case Node::Kind::kBreak: return Flow::kBreak;
    case Node::Kind::kContinue: return Flow::kContinue;
    case Node::Kind::kScope: return exec_body(node.body, out);
  }
  return Flow::kNormal;
}

Result<Interpreter::Flow> Interpreter::exec_for(const Node& node, std::string& out) {
  KESTREL_ASSIGN_OR_RETURN(Value iterable, eval(*node.expr));
  auto listed = iterate(iterable);
  if (!listed.ok()) return locate(listed.error(), node.expr->offset);
  std::vector<Value> items = std::move(listed).value();
  const auto outer = scope_;
  if (node.condition) {
    std::vector<Value> kept;
    for (Value& item : items) {
      scope_ = std::make_shared<Scope>(outer);
      auto bound = assign(node.target, item, node.offset);
      auto test = bound.ok() ? eval(*node.condition) : Result<Value>(locate(bound.error(), node.offset));
      scope_ = outer;
      if (!test.ok()) return test.error();
      if (truthy(*test)) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec_body(node.else_body, out);
  const auto length = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < length; ++i) {
    if (auto s = step(); !s.ok()) return locate(s.error(), node.offset);
    scope_ = std::make_shared<Scope>(outer);
    auto bound = assign(node.target, items[static_cast<size_t>(i)], node.offset);
    if (!bound.ok()) {
      scope_ = outer;
      return locate(bound.error(), node.offset);
    }
    std::vector<std::pair<Value, Value>> loop = {
        {"index", i + 1},         {"index0", i},          {"revindex", length - i}, {"revindex0", length - i - 1},
        {"first", i == 0},        {"last", i == length - 1}, {"length", length},    {"depth", int64_t{1}},
        {"depth0", int64_t{0}}};
    if (i > 0) loop.emplace_back("previtem", items[static_cast<size_t>(i - 1)]);
    if (i + 1 < length) loop.emplace_back("nextitem", items[static_cast<size_t>(i + 1)]);
    loop.emplace_back("cycle", Value::callable("cycle", [i](Interpreter&, CallArgs& args) -> Result<Value> {
                        if (args.positional.empty()) return type_error("no items for cycling given");
                        return args.positional[static_cast<size_t>(i) % args.positional.size()];
                      }));
    scope_->set("loop", Value::dict(std::move(loop)));
    auto flow = exec_body(node.body, out);
    scope_ = outer;
    if (!flow.ok()) return flow.error();
    if (*flow == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

Status Interpreter::assign(const Target& target, const Value& value, size_t offset) {
  if (!target.attribute.empty()) {
    const Value* object = scope_->find(target.names[0]);
    if (object == nullptr || object->kind() != Value::Kind::kNamespace)
      return type_error("cannot assign attribute on non-namespace object '" + target.names[0] + "'");
    if (value.holds_namespace()) return type_error("a namespace attribute cannot hold a namespace or a function");
    if (value.nesting() + 1 > kMaxNesting)
      return type_error(fmt::format("values nest deeper than {} levels", kMaxNesting));
    object->set_attribute(target.attribute, value);
    return ok_status();
  }
  if (!target.unpack) {
    scope_->set(target.names[0], value);
    return ok_status();
  }
  KESTREL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(value));
  if (items.size() < target.names.size())
    return type_error(fmt::format("not enough values to unpack (expected {}, got {})", target.names.size(),
                                  items.size()));
  if (items.size() > target.names.size())
    return type_error(fmt::format("too many values to unpack (expected {})", target.names.size()));
  for (size_t i = 0; i < items.size(); ++i) scope_->set(target.names[i], items[i]);
  return ok_status();
}

Result<Value> Interpreter::call_macro(const Node& macro, const std::shared_ptr<Scope>& scope, CallArgs& args) {
  if (call_depth_ >= options_.max_call_depth)
    return type_error(fmt::format("macro calls nest deeper than {} (endless recursion?)", options_.max_call_depth));
  if (args.positional.size() > macro.params.size())
    return type_error(fmt::format("macro '{}' takes not more than {} argument(s)", macro.text, macro.params.size()));
  auto frame = std::make_shared<Scope>(scope);
  std::vector<bool> given(macro.params.size(), false);
  for (size_t i = 0; i < args.positional.size(); ++i) {
    frame->set(macro.params[i].name, args.positional[i]);
    given[i] = true;
  }
  for (auto& [name, value] : args.keyword) {
    size_t index = macro.params.size();
    for (size_t i = 0; i < macro.params.size(); ++i)
      if (macro.params[i].name == name) index = i;
    if (index == macro.params.size())
      return type_error("macro '" + macro.text + "' takes no keyword argument '" + name + "'");
    if (given[index]) return type_error("macro '" + macro.text + "' got multiple values for argument '" + name + "'");
    frame->set(name, value);
    given[index] = true;
  }
  auto caller = std::exchange(scope_, frame);
  ++call_depth_;
  Status defaults;
  for (size_t i = 0; i < macro.params.size() && defaults.ok(); ++i) {
    if (given[i]) continue;
    const Param& param = macro.params[i];
    if (!param.value) {
      frame->set(param.name, Value::undefined("parameter '" + param.name + "' was not provided"));
      continue;
    }
    auto value = eval(*param.value);
    if (value.ok()) frame->set(param.name, std::move(value).value());
    else defaults = value.error();
  }
  std::string out;
  Result<Flow> flow = defaults.ok() ? exec_body(macro.body, out) : Result<Flow>(defaults.error());
  --call_depth_;
  scope_ = std::move(caller);
  if (!flow.ok()) return flow.error();
  return Value(std::move(out));
}

// ---- Interpreter: expressions --------------------------------------------------------------

Result<Value> Interpreter::eval(const Expr& expr) {
  if (auto s = step(); !s.ok()) return locate(s.error(), expr.offset);
  auto value = eval_inner(expr);
  if (!value.ok()) return locate(value.error(), expr.offset);
  return value;
}

Result<CallArgs> Interpreter::eval_args(const Expr& expr, size_t first) {
  CallArgs args;
  for (size_t i = first; i < expr.args.size(); ++i) {
    KESTREL_ASSIGN_OR_RETURN(Value value, eval(*expr.args[i]));
    args.positional.push_back(std::move(value));
  }
  for (const Keyword& keyword : expr.keywords) {
    KESTREL_ASSIGN_OR_RETURN(Value value, eval(*keyword.value));
    args.keyword.emplace_back(keyword.name, std::move(value));
  }
  return args;
}

Result<Value> Interpreter::eval_inner(const Expr& expr) {
  switch (expr.kind) {
    case Expr::Kind::kLiteral: return expr.literal;
    case Expr::Kind::kName:
      if (const Value* value = scope_->find(expr.name)) return *value;
      return Value::undefined("'" + expr.name + "' is undefined");
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      std::vector<Value> items;
      for (const ExprPtr& item : expr.args) {
        KESTREL_ASSIGN_OR_RETURN(Value value, eval(*item));
        items.push_back(std::move(value));
      }
      Value result = expr.kind == Expr::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
      if (result.nesting() > kMaxNesting)
        return type_error(fmt::format("values nest deeper than {} levels", kMaxNesting));
      return result;
    }
    case Expr::Kind::kDict: {
      std::vector<std::pair<Value, Value>> entries;
      for (size_t i = 0; i + 1 < expr.args.size(); i += 2) {
        KESTREL_ASSIGN_OR_RETURN(Value key, eval(*expr.args[i]));
        KESTREL_ASSIGN_OR_RETURN(Value value, eval(*expr.args[i + 1]));
        if (!hashable(key)) return type_error("unhashable type: '" + type_name(key) + "'");
        bool replaced = false;
        for (auto& [k, v] : entries)
          if (equals(k, key)) {
            v = value;
            replaced = true;
          }
        if (!replaced) entries.emplace_back(std::move(key), std::move(value));
      }
      Value result = Value::dict(std::move(entries));
      if (result.nesting() > kMaxNesting)
        return type_error(fmt::format("values nest deeper than {} levels", kMaxNesting));
      return result;
    }
    case Expr::Kind::kAttribute: {
      KESTREL_ASSIGN_OR_RETURN(Value object, eval(*expr.args[0]));
      return get_attribute(object, expr.name);
    }
    case Expr::Kind::kItem: {
      KESTREL_ASSIGN_OR_RETURN(Value object, eval(*expr.args[0]));
      KESTREL_ASSIGN_OR_RETURN(Value key, eval(*expr.args[1]));
      return get_item(object, key);
    }
    case Expr::Kind::kSlice: {
      KESTREL_ASSIGN_OR_RETURN(Value object, eval(*expr.args[0]));
      Value parts[3] = {Value::none(), Value::none(), Value::none()};
      for (size_t i = 0; i < 3; ++i)
        if (expr.args[i + 1]) {
          KESTREL_ASSIGN_OR_RETURN(parts[i], eval(*expr.args[i + 1]));
        }
      return slice(object, parts[0], parts[1], parts[2]);
    }
    case Expr::Kind::kCall: {
      KESTREL_ASSIGN_OR_RETURN(Value callee, eval(*expr.args[0]));
      KESTREL_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1));
      return call(callee, args);
    }
    case Expr::Kind::kFilter: {
      KESTREL_ASSIGN_OR_RETURN(Value operand, eval(*expr.args[0]));
      KESTREL_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1));
      return apply_filter(expr.name, operand, args);
    }
    case Expr::Kind::kTest: {
      KESTREL_ASSIGN_OR_RETURN(Value operand, eval(*expr.args[0]));
      KESTREL_ASSIGN_OR_RETURN(CallArgs args, eval_args(expr, 1));
      KESTREL_ASSIGN_OR_RETURN(bool result, apply_test(expr.name, operand, args));
      return Value(result != expr.negated);
    }
    case Expr::Kind::kNegate:
    case Expr::Kind::kPlus: {
      KESTREL_ASSIGN_OR_RETURN(Value operand, eval(*expr.args[0]));
      if (operand.is_undefined()) return type_error(operand.undefined_hint());
      const bool negate = expr.kind == Expr::Kind::kNegate;
      if (operand.is_float()) return Value(negate ? -operand.as_float() : operand.as_float());
      if (operand.is_number()) {
        if (!negate) return Value(operand.as_int());
        KESTREL_ASSIGN_OR_RETURN(int64_t v, checked(operand.as_int() == INT64_MIN, -operand.as_int()));
        return Value(v);
      }
      return type_error(fmt::format("bad operand type for unary {}: '{}'", negate ? '-' : '+', type_name(operand)));
    }
    case Expr::Kind::kNot: {
      KESTREL_ASSIGN_OR_RETURN(Value operand, eval(*expr.args[0]));
      return Value(!truthy(operand));
    }
    case Expr::Kind::kBinary: {
      KESTREL_ASSIGN_OR_RETURN(Value a, eval(*expr.args[0]));
      KESTREL_ASSIGN_OR_RETURN(Value b, eval(*expr.args[1]));
      if (expr.name == "~") {
        std::string text = to_str(a);
        const std::string right = to_str(b);
        KESTREL_RETURN_IF_ERROR(check_size(text.size() + right.size()));
        return Value(text + right);
      }
      return binary_operation(expr.name, a, b);
    }
    case Expr::Kind::kCompare: return eval_compare(expr);
    case Expr::Kind::kAnd:
    case Expr::Kind::kOr: {
      KESTREL_ASSIGN_OR_RETURN(Value a, eval(*expr.args[0]));
      if (truthy(a) == (expr.kind == Expr::Kind::kOr)) return a;
      return eval(*expr.args[1]);
    }
    case Expr::Kind::kCondition: {
      KESTREL_ASSIGN_OR_RETURN(Value test, eval(*expr.args[0]));
      if (truthy(test)) return eval(*expr.args[1]);
      if (expr.args[2]) return eval(*expr.args[2]);
      return Value::undefined("the inline if-expression evaluated to false and has no else section");
    }
  }
  return type_error("unknown expression");
}

Result<Value> Interpreter::eval_compare(const Expr& expr) {
  KESTREL_ASSIGN_OR_RETURN(Value left, eval(*expr.args[0]));
  for (size_t i = 0; i < expr.ops.size(); ++i) {
    KESTREL_ASSIGN_OR_RETURN(Value right, eval(*expr.args[i + 1]));
    const std::string& op = expr.ops[i];
    bool result = false;
    if (op == "==") {
      result = equals(left, right);
    } else if (op == "!=") {
      result = !equals(left, right);
    } else if (op == "in" || op == "notin") {
      KESTREL_ASSIGN_OR_RETURN(bool found, contains(right, left));
      result = found == (op == "in");
    } else {
      KESTREL_ASSIGN_OR_RETURN(int order, compare(left, right, op.c_str()));
      result = op == "<" ? order < 0 : op == "<=" ? order <= 0 : op == ">" ? order > 0 : order >= 0;
    }
    if (!result) return Value(false);
    left = std::move(right);
  }
  return Value(true);
}

Result<Value> Interpreter::binary_operation(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) return type_error(a.undefined_hint());
  if (b.is_undefined()) return type_error(b.undefined_hint());
  const auto unsupported = [&] {
    return type_error(fmt::format("unsupported operand type(s) for {}: '{}' and '{}'", op, type_name(a),
                                  type_name(b)));
  };
  const bool numbers = a.is_number() && b.is_number();
  const bool integers = numbers && !a.is_float() && !b.is_float();
  if (op == "+") {
    if (integers) {
      int64_t r = 0;
      const bool overflow = __builtin_add_overflow(a.as_int(), b.as_int(), &r);
      KESTREL_ASSIGN_OR_RETURN(r, checked(overflow, r));
      return Value(r);
    }
    if (numbers) return Value(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) {
      KESTREL_RETURN_IF_ERROR(check_size(a.as_string().size() + b.as_string().size()));
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      KESTREL_RETURN_IF_ERROR(check_size(a.items().size() + b.items().size()));
      std::vector<Value> items = a.items();
      items.insert(items.end(), b.items().begin(), b.items().end());
      return a.kind() == Value::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    if (a.is_string() || a.is_sequence())
      return type_error(fmt::format("can only concatenate {} (not \"{}\") to {}", type_name(a), type_name(b),
                                    type_name(a)));
    return unsupported();
  }
  if (op == "-") {
    if (integers) {
      int64_t r = 0;
      const bool overflow = __builtin_sub_overflow(a.as_int(), b.as_int(), &r);
      KESTREL_ASSIGN_OR_RETURN(r, checked(overflow, r));
      return Value(r);
    }
    if (numbers) return Value(a.as_float() - b.as_float());
    return unsupported();
  }
  if (op == "*") {
    if (integers) {
      int64_t r = 0;
      const bool overflow = __builtin_mul_overflow(a.as_int(), b.as_int(), &r);
      KESTREL_ASSIGN_OR_RETURN(r, checked(overflow, r));
      return Value(r);
    }
    if (numbers) return Value(a.as_float() * b.as_float());
    // Repetition: str * int, list * int (either order).
    const Value& seq = a.is_number() ? b : a;
    const Value& count = a.is_number() ? a : b;
    if (count.is_number() && !count.is_float() && (seq.is_string() || seq.is_sequence())) {
      const int64_t n = std::max<int64_t>(count.as_int(), 0);
      const size_t unit = seq.is_string() ? seq.as_string().size() : seq.items().size();
      // Lists count 16 bytes per item against the size limit.
      const uint64_t unit_bytes = seq.is_string() ? unit : unit * 16;
      if (unit_bytes > 0 && static_cast<uint64_t>(n) > static_cast<uint64_t>(options_.max_output_bytes) / unit_bytes)
        KESTREL_RETURN_IF_ERROR(check_size(static_cast<size_t>(options_.max_output_bytes) + 1));
      if (seq.is_string()) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += seq.as_string();
        return Value(std::move(out));
      }
      std::vector<Value> items;
      for (int64_t i = 0; i < n; ++i) items.insert(items.end(), seq.items().begin(), seq.items().end());
      return seq.kind() == Value::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    return unsupported();
  }
  if (op == "/") {
    if (!numbers) return unsupported();
    if (b.as_float() == 0) return type_error("division by zero");
    return Value(a.as_float() / b.as_float());
  }
  if (op == "//" || op == "%") {
    if (op == "%" && a.is_string()) return percent_format(a, b);
    if (!numbers) return unsupported();
    if (integers) {
      const int64_t x = a.as_int(), y = b.as_int();
      if (y == 0) return type_error("integer division or modulo by zero");
      if (x == INT64_MIN && y == -1) return checked(true, 0).error();
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value(op == "//" ? q : r);
    }
    const double x = a.as_float(), y = b.as_float();
    if (y == 0) return type_error(op == "//" ? "float floor division by zero" : "float modulo");
    if (op == "%") return Value(python_fmod(x, y));
    // CPython's float floor division.
    double mod = std::fmod(x, y);
    double div = (x - mod) / y;
    if (mod != 0 && ((y < 0) != (mod < 0))) div -= 1.0;
    if (div == 0) return Value(std::copysign(0.0, x / y));
    double floor_div = std::floor(div);
    if (div - floor_div > 0.5) floor_div += 1.0;
    return Value(floor_div);
  }
  if (op == "**") {
    if (!numbers) return unsupported();
    if (integers && b.as_int() >= 0) {
      int64_t result = 1, base = a.as_int(), exponent = b.as_int();
      while (exponent > 0) {
        if (exponent & 1) {
          const bool overflow = __builtin_mul_overflow(result, base, &result);
          KESTREL_ASSIGN_OR_RETURN(result, checked(overflow, result));
        }
        exponent >>= 1;
        if (exponent > 0) {
          const bool overflow = __builtin_mul_overflow(base, base, &base);
          KESTREL_ASSIGN_OR_RETURN(base, checked(overflow, base));
        }
      }
      return Value(result);
    }
    const double x = a.as_float(), y = b.as_float();
    if (x == 0 && y < 0) return type_error("0.0 cannot be raised to a negative power");
    if (x < 0 && y != std::floor(y)) return type_error("a negative number to a fractional power is complex");
    return Value(std::pow(x, y));
  }
  return type_error("unknown operator " + op);
}

Result<bool> Interpreter::contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string())
        return type_error("'in <string>' requires string as left operand, not " + type_name(item));
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
    case Value::Kind::kTuple:
    case Value::Kind::kIterator: {
      KESTREL_ASSIGN_OR_RETURN(std::vector<Value> items, iterate(container));
      for (const Value& candidate : items)
        if (equals(candidate, item)) return true;
      return false;
    }
    case Value::Kind::kDict:
      if (!hashable(item)) return type_error("unhashable type: '" + type_name(item) + "'");
      return container.find(item) != nullptr;
    default: return type_error("argument of type '" + type_name(container) + "' is not iterable");
  }
}

Result<Value> Interpreter::percent_format(const Value& format, const Value& args) {
  const std::string& text = format.as_string();
  std::vector<Value> positional;
  const bool mapping = args.kind() == Value::Kind::kDict;
  if (args.kind() == Value::Kind::kTuple) positional = args.items();
  else positional.push_back(args);
  size_t next_arg = 0;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (++i >= text.size()) return type_error("incomplete format");
    if (text[i] == '%') {
      out += '%';
      continue;
    }
    const Value* arg = nullptr;
    if (text[i] == '(') {
      const size_t close = text.find(')', i);
      if (close == std::string::npos) return type_error("incomplete format key");
      if (!mapping) return type_error("format requires a mapping");
      arg = args.find(Value(text.substr(i + 1, close - i - 1)));
      if (arg == nullptr) return type_error("format key '" + text.substr(i + 1, close - i - 1) + "' is missing");
      i = close + 1;
    }
    FormatSpec spec;
    while (i < text.size() && std::string_view("-+ #0").find(text[i]) != std::string_view::npos) spec.flags += text[i++];
    auto read_number = [&](int& target) {
      if (i >= text.size() || text[i] < '0' || text[i] > '9') return;
      target = 0;
      while (i < text.size() && text[i] >= '0' && text[i] <= '9' && target < 100000) target = target * 10 + (text[i++] - '0');
    };
    read_number(spec.width);
    if (i < text.size() && text[i] == '.') {
      ++i;
      spec.precision = 0;
      read_number(spec.precision);
    }
    while (i < text.size() && (text[i] == 'h' || text[i] == 'l' || text[i] == 'L')) ++i;
    if (i >= text.size()) return type_error("incomplete format");
    spec.conversion = text[i];
    if (arg == nullptr) {
      if (next_arg >= positional.size()) return type_error("not enough arguments for format string");
      arg = &positional[next_arg++];
    }
    KESTREL_RETURN_IF_ERROR(check_size(static_cast<size_t>(std::max(spec.width, 0))));
    KESTREL_ASSIGN_OR_RETURN(std::string piece, format_one(spec, *arg));
    out += piece;
    KESTREL_RETURN_IF_ERROR(check_size(out.size()));
  }
  if (!mapping && next_arg < positional.size()) return type_error("not all arguments converted during string formatting");
  return Value(std::move(out));
}

Result<Value> Interpreter::slice(const Value& object, const Value& start, const Value& stop, const Value& step_value) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  for (const Value* part : {&start, &stop, &step_value})
    if (!part->is_none() && !(part->is_number() && !part->is_float()))
      return type_error("slice indices must be integers or None");
  const int64_t step = step_value.is_none() ? 1 : step_value.as_int();
  if (step == 0) return type_error("slice step cannot be zero");
  std::vector<size_t> offsets;
  int64_t length = 0;
  if (object.is_string()) {
    offsets = code_point_offsets(object.as_string());
    length = static_cast<int64_t>(offsets.size()) - 1;
  } else if (object.is_sequence()) {
    length = static_cast<int64_t>(object.items().size());
  } else {
    return Value::undefined(object_label(object) + " cannot be sliced");
  }
  // Python's slice.indices().
  const int64_t lower = step < 0 ? -1 : 0, upper = step < 0 ? length - 1 : length;
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none()) return fallback;
    int64_t i = v.as_int();
    if (i < 0) {
      i += length;
      if (i < lower) i = lower;
    } else if (i > upper) {
      i = upper;
    }
    return i;
  };
  const int64_t first = clamp(start, step < 0 ? upper : lower);
  const int64_t last = clamp(stop, step < 0 ? lower : upper);
  std::vector<int64_t> indices;
  for (int64_t i = first; step > 0 ? i < last : i > last; i += step) indices.push_back(i);
  if (object.is_string()) {
    const std::string& s = object.as_string();
    std::string out;
    for (int64_t i : indices) out += s.substr(offsets[i], offsets[i + 1] - offsets[i]);
    return Value(std::move(out));
  }
  std::vector<Value> items;
  for (int64_t i : indices) items.push_back(object.items()[static_cast<size_t>(i)]);
  return object.kind() == Value::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
}

Result<Value> Interpreter::get_attribute(const Value& object, const std::string& name) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  if (auto method = find_method(object, name)) return *method;
  if (object.is_mapping()) {
    if (const Value* value = object.find(Value(name))) return *value;
  }
  return missing_attribute(object, name);
}

Result<Value> Interpreter::get_item(const Value& object, const Value& key) {
  if (object.is_undefined()) return type_error(object.undefined_hint());
  if (object.is_mapping()) {
    if (hashable(key))
      if (const Value* value = object.find(key)) return *value;
  } else if ((object.is_sequence() || object.is_string()) && key.is_number() && !key.is_float()) {
    int64_t index = key.as_int();
    if (object.is_string()) {
      const auto offsets = code_point_offsets(object.as_string());
      const auto length = static_cast<int64_t>(offsets.size()) - 1;
      if (index < 0) index += length;
      if (index >= 0 && index < length)
        return Value(object.as_string().substr(offsets[index], offsets[index + 1] - offsets[index]));
    } else {
      const auto length = static_cast<int64_t>(object.items().size());
      if (index < 0) index += length;
      if (index >= 0 && index < length) return object.items()[static_cast<size_t>(index)];
    }
  }
  if (key.is_string())
    if (auto method = find_method(object, key.as_string())) return *method;
  return missing_item(object, key);
}

Result<Value> Interpreter::call(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) return type_error(callee.undefined_hint());
  if (!callee.is_callable()) return type_error("'" + type_name(callee) + "' object is not callable");
  KESTREL_ASSIGN_OR_RETURN(Value result, callee.as_callable().function(*this, args));
  KESTREL_RETURN_IF_ERROR(charge(data_size(result)));
  return result;
}

Result<Value> Interpreter::apply_filter(const std::string& name, const Value& operand, CallArgs& args) {
  const FilterFunction filter = find_filter(name);
  if (filter == nullptr) return type_error("no filter named '" + name + "'");
  auto result = filter(*this, operand, args);
  if (!result.ok()) return result.error();
  if (result->is_string()) KESTREL_RETURN_IF_ERROR(check_size(result->as_string().size()));
  KESTREL_RETURN_IF_ERROR(charge(data_size(*result)));
  return result;
}

Result<bool> Interpreter::apply_test(const std::string& name, const Value& operand, CallArgs& args) {
  const TestFunction test = find_test(name);
  if (test == nullptr) return type_error("no test named '" + name + "'");
  return test(*this, operand, args);
}

Result<std::vector<Value>> Interpreter::iterate(const Value& value) {
  KESTREL_RETURN_IF_ERROR(charge(data_size(value)));
  switch (value.kind()) {
    case Value::Kind::kUndefined: return std::vector<Value>();
    case Value::Kind::kList:
    case Value::Kind::kTuple: return value.items();
    case Value::Kind::kIterator:
      if (!value.consume_iterator()) return std::vector<Value>();
      return value.items();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& entry : value.entries()) keys.push_back(entry.first);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::string& s = value.as_string();
      const auto offsets = code_point_offsets(s);
      for (size_t i = 0; i + 1 < offsets.size(); ++i)
        chars.emplace_back(s.substr(offsets[i], offsets[i + 1] - offsets[i]));
      return chars;
    }
    default: return type_error("'" + type_name(value) + "' object is not iterable");
  }
}

}  // namespace kestrel::jinja
