// Renders a parsed template: scopes, statements, expressions and the limits that keep
// untrusted templates from exhausting the stack, memory or time (internal).
#pragma once

#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"
#include "jinja/value.h"
#include "kestrel/jinja/template.h"

namespace kestrel::jinja {

// The variables of one frame (template, loop iteration, macro call); lookups continue in the
// parent, assignments stay here.
class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);

 private:
  std::shared_ptr<Scope> parent_;
  std::vector<std::pair<std::string, Value>> variables_;
};

class Interpreter {
 public:
  Interpreter(const SourceMap& map, const RenderOptions& options);

  // Renders `body` with the members of `context` (a dict) as variables.
  Result<std::string> render(const Body& body, const Value& context);

  // ---- used by filters, tests, methods and globals ----
  // obj.name: methods first, then items (Jinja's getattr).
  Result<Value> get_attribute(const Value& object, const std::string& name);
  // obj[key]: items first, then methods (Jinja's getitem).
  Result<Value> get_item(const Value& object, const Value& key);
  Result<Value> apply_filter(const std::string& name, const Value& operand, CallArgs& args);
  Result<bool> apply_test(const std::string& name, const Value& operand, CallArgs& args);
  Result<Value> call(const Value& callee, CallArgs& args);
  // The items a for loop visits: sequence items, dict keys, string characters; undefined
  // yields nothing; iterators are used up.
  Result<std::vector<Value>> iterate(const Value& value);
  // A string or list of this many bytes or items would exceed the output limit.
  Status check_size(size_t size) const;
  std::time_t now() const;

  // a op b for + - * / // % ** (Python semantics; str % args formats).
  Result<Value> binary_operation(const std::string& op, const Value& a, const Value& b);
  // item in container (Python semantics; in an undefined value nothing is found).
  Result<bool> contains(const Value& container, const Value& item);
  // Python's printf-style `format % args`.
  Result<Value> percent_format(const Value& format, const Value& args);

  Result<Value> call_macro(const Node& macro, const std::shared_ptr<Scope>& scope, CallArgs& args);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Result<Flow> exec_body(const Body& body, std::string& out);
  Result<Flow> exec(const Node& node, std::string& out);
  Result<Flow> exec_for(const Node& node, std::string& out);
  Status assign(const Target& target, const Value& value, size_t offset);
  Status append(std::string& out, std::string_view text);

  Result<Value> eval(const Expr& expr);
  Result<Value> eval_inner(const Expr& expr);
  Result<CallArgs> eval_args(const Expr& expr, size_t first);
  Result<Value> eval_compare(const Expr& expr);
  Result<Value> slice(const Value& object, const Value& start, const Value& stop, const Value& step);

  // The step budget: one per statement and expression, plus the size of the data that
  // iterations, filters and calls produce, so no template can run for long on little text.
  Status step() { return charge(1); }
  Status charge(size_t units);
  Error locate(const Error& error, size_t offset);

  const SourceMap& map_;
  RenderOptions options_;
  std::shared_ptr<Scope> scope_;
  int call_depth_ = 0;
  int64_t steps_ = 0;
  bool located_ = false;  // the error being returned already names its position
};

}  // namespace kestrel::jinja
