#include "jinja/parser.h"

#include <charconv>
#include <cstdlib>

#include "jinja/builtins.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::jinja {

namespace {

// Deeper nesting than this (parentheses, brackets, blocks) is refused before it can exhaust
// the stack; real templates nest a handful of levels.
constexpr int kMaxParseDepth = 64;

std::string describe(const Token& token) {
  switch (token.kind) {
    case TokenKind::kData: return "template text";
    case TokenKind::kVariableBegin: return "'{{'";
    case TokenKind::kVariableEnd: return "end of print statement '}}'";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "end of statement block '%}'";
    case TokenKind::kName:
    case TokenKind::kOperator: return "'" + token.value + "'";
    case TokenKind::kString: return "string literal";
    case TokenKind::kInteger:
    case TokenKind::kFloat: return "number " + token.value;
    case TokenKind::kEof: return "end of template";
  }
  return "token";
}

class Parser {
 public:
  Parser(const std::vector<Token>& tokens, const SourceMap& map) : tokens_(tokens), map_(map) {}

  Result<Body> parse() {
    KESTREL_ASSIGN_OR_RETURN(Body body, subparse({}));
    if (current().kind != TokenKind::kEof) return fail(current(), "unexpected " + describe(current()));
    return body;
  }

 private:
  // ---- token stream -------------------------------------------------------------------

  const Token& current() const { return tokens_[pos_]; }
  const Token& look() const { return tokens_[std::min(pos_ + 1, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& token = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }
  bool is_op(const Token& token, std::string_view op) const {
    return token.kind == TokenKind::kOperator && token.value == op;
  }
  bool is_name(const Token& token, std::string_view name) const {
    return token.kind == TokenKind::kName && token.value == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(current(), op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(current(), name)) return false;
    next();
    return true;
  }

  Error fail(const Token& at, const std::string& message) const { return fail_at(at.offset, message); }
  Error fail_at(size_t offset, const std::string& message) const {
    return Error(ErrorCode::kInvalidArgument, describe_position(map_, offset) + ": " + message);
  }
  Error unexpected(const std::string& expected) const {
    if (current().kind == TokenKind::kEof)
      return fail(current(), "unexpected end of template, expected " + expected);
    return fail(current(), "expected " + expected + ", got " + describe(current()));
  }
  Status expect_op(std::string_view op) {
    if (!skip_op(op)) return unexpected("'" + std::string(op) + "'");
    return ok_status();
  }
  Status expect_kind(TokenKind kind, const std::string& what) {
    if (current().kind != kind) return unexpected(what);
    next();
    return ok_status();
  }
  Result<std::string> expect_identifier() {
    if (current().kind != TokenKind::kName) return unexpected("a name");
    return next().value;
  }

  // Keeps recursion bounded: every nested construct goes through one of these.
  class DepthGuard {
   public:
    explicit DepthGuard(int& depth) : depth_(depth) { ++depth_; }
    ~DepthGuard() { --depth_; }
    bool exceeded() const { return depth_ > kMaxParseDepth; }

   private:
    int& depth_;
  };
  Error too_deep() const { return fail(current(), fmt::format("the template nests deeper than {} levels", kMaxParseDepth)); }

  // ---- statements -------------------------------------------------------------------

  // Parses template content until a block tag whose name is in `end_names` (left as the
  // current token) or the end of the template.
  Result<Body> subparse(const std::vector<std::string_view>& end_names) {
    Body body;
    while (current().kind != TokenKind::kEof) {
      const Token& token = current();
      if (token.kind == TokenKind::kData) {
        auto node = std::make_unique<Node>(Node::Kind::kText, token.offset);
        node->text = token.value;
        body.push_back(std::move(node));
        next();
      } else if (token.kind == TokenKind::kVariableBegin) {
        next();
        auto node = std::make_unique<Node>(Node::Kind::kOutput, token.offset);
        KESTREL_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, {}, false));
        KESTREL_RETURN_IF_ERROR(expect_kind(TokenKind::kVariableEnd, "end of print statement '}}'"));
        body.push_back(std::move(node));
      } else if (token.kind == TokenKind::kBlockBegin) {
        next();
        for (std::string_view end : end_names)
          if (is_name(current(), end)) return body;
        KESTREL_ASSIGN_OR_RETURN(NodePtr node, parse_statement(token));
        KESTREL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "end of statement block '%}'"));
        if (node) body.push_back(std::move(node));
      } else {
        return fail(token, "unexpected " + describe(token));
      }
    }
    return body;
  }

  // Statement header done: expects '%}', then the body up to one of `end_names`.
  Result<Body> parse_statements(const std::vector<std::string_view>& end_names, const Token& opener,
                                bool drop_end) {
    DepthGuard guard(depth_);
    if (guard.exceeded()) return too_deep();
    skip_op(":");
    KESTREL_RETURN_IF_ERROR(expect_kind(TokenKind::kBlockEnd, "end of statement block '%}'"));
    KESTREL_ASSIGN_OR_RETURN(Body body, subparse(end_names));
    if (current().kind == TokenKind::kEof) {
      std::string expected;
      for (std::string_view end : end_names) expected += (expected.empty() ? "'" : " or '") + std::string(end) + "'";
      const SourcePosition open = map_.position(opener.offset);
      return fail(current(), fmt::format("unexpected end of template, expected {} to close the block opened at "
                                         "line {}, column {}",
                                         expected, open.line, open.column));
    }
    if (drop_end) next();
    return body;
  }

  Result<NodePtr> parse_statement(const Token& begin) {
    const Token& tag = current();
    if (tag.kind != TokenKind::kName) return fail(tag, "expected a tag name, got " + describe(tag));
    const std::string& name = tag.value;
    if (name == "if") return parse_if(begin);
    if (name == "for") return parse_for(begin);
    if (name == "set") return parse_set(begin);
    if (name == "macro") return parse_macro(begin);
    if (name == "filter") return parse_filter_block(begin);
    if (name == "with") return parse_with(begin);
    if (name == "generation") {
      next();
      auto node = std::make_unique<Node>(Node::Kind::kScope, begin.offset);
      KESTREL_ASSIGN_OR_RETURN(node->body, parse_statements({"endgeneration"}, begin, true));
      return node;
    }
    if (name == "print") {
      next();
      auto node = std::make_unique<Node>(Node::Kind::kOutput, begin.offset);
      KESTREL_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, {}, false));
      return node;
    }
    if (name == "break" || name == "continue") {
      if (loop_depth_ == 0) return fail(tag, "'" + name + "' outside of a for loop");
      next();
      return std::make_unique<Node>(name == "break" ? Node::Kind::kBreak : Node::Kind::kContinue, begin.offset);
    }
    static const char* const kUnsupported[] = {"block", "extends", "include", "import", "from", "call",
                                               "autoescape", "do"};
    for (const char* unsupported : kUnsupported)
      if (name == unsupported)
        return fail(tag, "the '" + name + "' tag is not supported in chat templates");
    if (name.rfind("end", 0) == 0 || name == "else" || name == "elif")
      return fail(tag, "'" + name + "' does not close any open block here");
    return fail(tag, "unknown tag '" + name + "'");
  }

  Result<NodePtr> parse_if(const Token& begin) {
    next();  // if
    auto node = std::make_unique<Node>(Node::Kind::kIf, begin.offset);
    while (true) {
      Branch branch;
      KESTREL_ASSIGN_OR_RETURN(branch.test, parse_tuple(false, {}, false));
      KESTREL_ASSIGN_OR_RETURN(branch.body, parse_statements({"elif", "else", "endif"}, begin, false));
      node->branches.push_back(std::move(branch));
      const Token& end = next();
      if (end.value == "elif") continue;
      if (end.value == "else") {
        KESTREL_ASSIGN_OR_RETURN(node->else_body, parse_statements({"endif"}, begin, true));
      }
      break;
    }
    return node;
  }

  Result<NodePtr> parse_for(const Token& begin) {
    next();  // for
    auto node = std::make_unique<Node>(Node::Kind::kFor, begin.offset);
    KESTREL_ASSIGN_OR_RETURN(node->target, parse_assign_target(false, {"in"}));
    if (!skip_name("in")) return unexpected("'in'");
    KESTREL_ASSIGN_OR_RETURN(node->expr, parse_tuple(false, {"recursive"}, false));
    if (skip_name("if")) {
      KESTREL_ASSIGN_OR_RETURN(node->condition, parse_expression(true));
    }
    if (is_name(current(), "recursive")) return fail(current(), "recursive for loops are not supported");
    ++loop_depth_;
    auto body = parse_statements({"endfor", "else"}, begin, false);
    --loop_depth_;
    if (!body.ok()) return body.error();
    node->body = std::move(body).value();
    if (next().value == "else") {
      KESTREL_ASSIGN_OR_RETURN(node->else_body, parse_statements({"endfor"}, begin, true));
    }
    return node;
  }

  Result<NodePtr> parse_set(const Token& begin) {
    next();  // set
    auto node = std::make_unique<Node>(Node::Kind::kSet, begin.offset);
    KESTREL_ASSIGN_OR_RETURN(node->target, parse_assign_target(true, {}));
    if (skip_op("=")) {
      KESTREL_ASSIGN_OR_RETURN(node->expr, parse_tuple(true, {}, false));
      return node;
    }
    node->kind = Node::Kind::kSetBlock;
    if (is_op(current(), "|")) {
      KESTREL_ASSIGN_OR_RETURN(node->expr, parse_filters(nullptr, false));
    }
    KESTREL_ASSIGN_OR_RETURN(node->body, parse_statements({"endset"}, begin, true));
    return node;
  }

  Result<NodePtr> parse_macro(const Token& begin) {
    next();  // macro
    auto node = std::make_unique<Node>(Node::Kind::kMacro, begin.offset);
    KESTREL_ASSIGN_OR_RETURN(node->text, expect_identifier());
    KESTREL_RETURN_IF_ERROR(expect_op("("));
    bool defaults = false;
    while (!is_op(current(), ")")) {
      if (!node->params.empty()) KESTREL_RETURN_IF_ERROR(expect_op(","));
      if (is_op(current(), ")")) break;
      Param param;
      KESTREL_ASSIGN_OR_RETURN(param.name, expect_identifier());
      if (skip_op("=")) {
        KESTREL_ASSIGN_OR_RETURN(param.value, parse_expression(true));
        defaults = true;
      } else if (defaults) {
        return fail(current(), "non-default argument follows default argument");
      }
      node->params.push_back(std::move(param));
    }
    next();  // )
    const int loops = loop_depth_;
    loop_depth_ = 0;  // break/continue cannot leave a macro
    auto body = parse_statements({"endmacro"}, begin, true);
    loop_depth_ = loops;
    if (!body.ok()) return body.error();
    node->body = std::move(body).value();
    return node;
  }

  Result<NodePtr> parse_filter_block(const Token& begin) {
    next();  // filter
    auto node = std::make_unique<Node>(Node::Kind::kFilterBlock, begin.offset);
    KESTREL_ASSIGN_OR_RETURN(node->expr, parse_filters(nullptr, true));
    KESTREL_ASSIGN_OR_RETURN(node->body, parse_statements({"endfilter"}, begin, true));
    return node;
  }

  Result<NodePtr> parse_with(const Token& begin) {
    next();  // with
    auto node = std::make_unique<Node>(Node::Kind::kWith, begin.offset);
    while (current().kind != TokenKind::kBlockEnd) {
      if (!node->params.empty()) KESTREL_RETURN_IF_ERROR(expect_op(","));
      Param param;
      KESTREL_ASSIGN_OR_RETURN(param.name, expect_identifier());
      KESTREL_RETURN_IF_ERROR(expect_op("="));
      KESTREL_ASSIGN_OR_RETURN(param.value, parse_expression(true));
      node->params.push_back(std::move(param));
    }
    KESTREL_ASSIGN_OR_RETURN(node->body, parse_statements({"endwith"}, begin, true));
    return node;
  }

  // A name, names separated by commas (optionally in parentheses), or with_namespace's
  // "ns.attribute".
  Result<Target> parse_assign_target(bool with_namespace, const std::vector<std::string_view>& end_names) {
    Target target;
    if (with_namespace && current().kind == TokenKind::kName && is_op(look(), ".")) {
      target.names.push_back(next().value);
      next();  // .
      KESTREL_ASSIGN_OR_RETURN(target.attribute, expect_identifier());
      return target;
    }
    const bool parenthesized = skip_op("(");
    while (true) {
      if (current().kind != TokenKind::kName) return unexpected("a name to assign to");
      const std::string& name = current().value;
      if (name == "true" || name == "false" || name == "none" || name == "True" || name == "False" ||
          name == "None")
        return fail(current(), "cannot assign to '" + name + "'");
      target.names.push_back(next().value);
      if (!skip_op(",")) break;
      target.unpack = true;
      bool end = current().kind == TokenKind::kBlockEnd || is_op(current(), ")");
      for (std::string_view e : end_names) end = end || is_name(current(), e);
      if (end) break;
    }
    if (parenthesized) {
      KESTREL_RETURN_IF_ERROR(expect_op(")"));
      target.unpack = true;
    }
    return target;
  }

  // ---- expressions ------------------------------------------------------------------

  bool is_tuple_end(const std::vector<std::string_view>& extra_end) const {
    const Token& t = current();
    if (t.kind == TokenKind::kVariableEnd || t.kind == TokenKind::kBlockEnd || t.kind == TokenKind::kEof ||
        is_op(t, ")"))
      return true;
    for (std::string_view e : extra_end)
      if (is_name(t, e)) return true;
    return false;
  }

  // Expressions separated by commas form a tuple.
  Result<ExprPtr> parse_tuple(bool with_condition, const std::vector<std::string_view>& extra_end,
                              bool explicit_parentheses) {
    const size_t offset = current().offset;
    std::vector<ExprPtr> items;
    bool is_tuple = false;
    while (true) {
      if (!items.empty()) KESTREL_RETURN_IF_ERROR(expect_op(","));
      if (is_tuple_end(extra_end)) break;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(with_condition));
      items.push_back(std::move(item));
      if (!is_op(current(), ",")) break;
      is_tuple = true;
    }
    if (!is_tuple) {
      if (!items.empty()) return std::move(items.front());
      if (!explicit_parentheses) return unexpected("an expression");
    }
    auto tuple = std::make_unique<Expr>(Expr::Kind::kTuple, offset);
    tuple->args = std::move(items);
    return tuple;
  }

  Result<ExprPtr> parse_expression(bool with_condition) {
    DepthGuard guard(depth_);
    if (guard.exceeded()) return too_deep();
    return with_condition ? parse_condition() : parse_or();
  }

  static ExprPtr make(Expr::Kind kind, size_t offset, ExprPtr a, ExprPtr b = nullptr) {
    auto e = std::make_unique<Expr>(kind, offset);
    e->args.push_back(std::move(a));
    if (b) e->args.push_back(std::move(b));
    return e;
  }

  Result<ExprPtr> parse_condition() {
    KESTREL_ASSIGN_OR_RETURN(ExprPtr expr, parse_or());
    while (is_name(current(), "if")) {
      const size_t offset = next().offset;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr test, parse_or());
      ExprPtr otherwise;
      if (skip_name("else")) {
        DepthGuard guard(depth_);
        if (guard.exceeded()) return too_deep();
        KESTREL_ASSIGN_OR_RETURN(otherwise, parse_condition());
      }
      auto cond = std::make_unique<Expr>(Expr::Kind::kCondition, offset);
      cond->args.push_back(std::move(test));
      cond->args.push_back(std::move(expr));
      cond->args.push_back(std::move(otherwise));
      expr = std::move(cond);
    }
    return expr;
  }

  Result<ExprPtr> parse_or() {
    KESTREL_ASSIGN_OR_RETURN(ExprPtr left, parse_and());
    while (is_name(current(), "or")) {
      const size_t offset = next().offset;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr right, parse_and());
      left = make(Expr::Kind::kOr, offset, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_and() {
    KESTREL_ASSIGN_OR_RETURN(ExprPtr left, parse_not());
    while (is_name(current(), "and")) {
      const size_t offset = next().offset;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr right, parse_not());
      left = make(Expr::Kind::kAnd, offset, std::move(left), std::move(right));
    }
    return left;
  }

  Result<ExprPtr> parse_not() {
    if (is_name(current(), "not")) {
      const size_t offset = next().offset;
      DepthGuard guard(depth_);
      if (guard.exceeded()) return too_deep();
      KESTREL_ASSIGN_OR_RETURN(ExprPtr operand, parse_not());
      return make(Expr::Kind::kNot, offset, std::move(operand));
    }
    return parse_compare();
  }

  Result<ExprPtr> parse_compare() {
    const size_t offset = current().offset;
    KESTREL_ASSIGN_OR_RETURN(ExprPtr first, parse_math1());
    auto compare = std::make_unique<Expr>(Expr::Kind::kCompare, offset);
    compare->args.push_back(std::move(first));
    while (true) {
      std::string op;
      const Token& t = current();
      if (t.kind == TokenKind::kOperator &&
          (t.value == "==" || t.value == "!=" || t.value == "<" || t.value == "<=" || t.value == ">" ||
           t.value == ">=")) {
        op = next().value;
      } else if (is_name(t, "in")) {
        next();
        op = "in";
      } else if (is_name(t, "not") && is_name(look(), "in")) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      KESTREL_ASSIGN_OR_RETURN(ExprPtr operand, parse_math1());
      compare->ops.push_back(op);
      compare->args.push_back(std::move(operand));
    }
    if (compare->ops.empty()) return std::move(compare->args.front());
    return ExprPtr(std::move(compare));
  }

  Result<ExprPtr> parse_binary_level(int level) {
    // Levels from loosest: 0 "+ -", 1 "~", 2 "* / // %", 3 "**".
    static const std::vector<std::vector<std::string_view>> kLevels = {
        {"+", "-"}, {"~"}, {"*", "/", "//", "%"}, {"**"}};
    if (level == 4) return parse_unary(true);
    KESTREL_ASSIGN_OR_RETURN(ExprPtr left, parse_binary_level(level + 1));
    while (true) {
      std::string_view op;
      for (std::string_view candidate : kLevels[static_cast<size_t>(level)])
        if (is_op(current(), candidate)) op = candidate;
      if (op.empty()) break;
      const size_t offset = next().offset;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr right, parse_binary_level(level + 1));
      left = make(Expr::Kind::kBinary, offset, std::move(left), std::move(right));
      left->name = std::string(op);
    }
    return left;
  }
  Result<ExprPtr> parse_math1() { return parse_binary_level(0); }

  Result<ExprPtr> parse_unary(bool with_filter) {
    DepthGuard guard(depth_);
    if (guard.exceeded()) return too_deep();
    ExprPtr node;
    if (is_op(current(), "-") || is_op(current(), "+")) {
      const Token& sign = next();
      KESTREL_ASSIGN_OR_RETURN(ExprPtr operand, parse_unary(false));
      node = make(sign.value == "-" ? Expr::Kind::kNegate : Expr::Kind::kPlus, sign.offset, std::move(operand));
    } else {
      KESTREL_ASSIGN_OR_RETURN(node, parse_primary());
    }
    KESTREL_ASSIGN_OR_RETURN(node, parse_postfix(std::move(node)));
    if (with_filter) {
      KESTREL_ASSIGN_OR_RETURN(node, parse_filter_expr(std::move(node)));
    }
    return node;
  }

  Result<ExprPtr> parse_primary() {
    const Token& token = current();
    auto literal = [&](Value value) {
      auto e = std::make_unique<Expr>(Expr::Kind::kLiteral, token.offset);
      e->literal = std::move(value);
      return e;
    };
    switch (token.kind) {
      case TokenKind::kName: {
        next();
        if (token.value == "true" || token.value == "True") return literal(Value(true));
        if (token.value == "false" || token.value == "False") return literal(Value(false));
        if (token.value == "none" || token.value == "None") return literal(Value::none());
        auto e = std::make_unique<Expr>(Expr::Kind::kName, token.offset);
        e->name = token.value;
        return e;
      }
      case TokenKind::kString: {
        std::string text;
        while (current().kind == TokenKind::kString) text += next().value;  // adjacent strings join
        return literal(Value(std::move(text)));
      }
      case TokenKind::kInteger: {
        next();
        KESTREL_ASSIGN_OR_RETURN(int64_t value, parse_integer(token));
        return literal(Value(value));
      }
      case TokenKind::kFloat: {
        next();
        return literal(Value(std::strtod(token.value.c_str(), nullptr)));
      }
      case TokenKind::kOperator:
        if (token.value == "(") {
          next();
          KESTREL_ASSIGN_OR_RETURN(ExprPtr inner, parse_tuple(true, {}, true));
          KESTREL_RETURN_IF_ERROR(expect_op(")"));
          return inner;
        }
        if (token.value == "[") return parse_list();
        if (token.value == "{") return parse_dict();
        break;
      default: break;
    }
    if (token.kind == TokenKind::kEof) return unexpected("an expression");
    return fail(token, "unexpected " + describe(token));
  }

  Result<int64_t> parse_integer(const Token& token) const {
    std::string_view digits = token.value;
    int base = 10;
    if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'b' || digits[1] == 'o' || digits[1] == 'x')) {
      base = digits[1] == 'b' ? 2 : digits[1] == 'o' ? 8 : 16;
      digits.remove_prefix(2);
    }
    int64_t value = 0;
    const auto result = std::from_chars(digits.data(), digits.data() + digits.size(), value, base);
    if (result.ec != std::errc() || result.ptr != digits.data() + digits.size())
      return fail(token, "integer literal " + token.value + " does not fit in 64 bits");
    return value;
  }

  Result<ExprPtr> parse_list() {
    auto list = std::make_unique<Expr>(Expr::Kind::kList, next().offset);
    while (!is_op(current(), "]")) {
      if (!list->args.empty()) KESTREL_RETURN_IF_ERROR(expect_op(","));
      if (is_op(current(), "]")) break;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr item, parse_expression(true));
      list->args.push_back(std::move(item));
    }
    KESTREL_RETURN_IF_ERROR(expect_op("]"));
    return ExprPtr(std::move(list));
  }

  Result<ExprPtr> parse_dict() {
    auto dict = std::make_unique<Expr>(Expr::Kind::kDict, next().offset);
    while (!is_op(current(), "}")) {
      if (!dict->args.empty()) KESTREL_RETURN_IF_ERROR(expect_op(","));
      if (is_op(current(), "}")) break;
      KESTREL_ASSIGN_OR_RETURN(ExprPtr key, parse_expression(true));
      KESTREL_RETURN_IF_ERROR(expect_op(":"));
      KESTREL_ASSIGN_OR_RETURN(ExprPtr value, parse_expression(true));
      dict->args.push_back(std::move(key));
      dict->args.push_back(std::move(value));
    }
    KESTREL_RETURN_IF_ERROR(expect_op("}"));
    return ExprPtr(std::move(dict));
  }

  Result<ExprPtr> parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(current(), ".") || is_op(current(), "[")) {
        KESTREL_ASSIGN_OR_RETURN(node, parse_subscript(std::move(node)));
      } else if (is_op(current(), "(")) {
        KESTREL_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op(current(), "|")) {
        KESTREL_ASSIGN_OR_RETURN(node, parse_filters(std::move(node), false));
      } else if (is_name(current(), "is")) {
        KESTREL_ASSIGN_OR_RETURN(node, parse_test(std::move(node)));
      } else if (is_op(current(), "(")) {
        KESTREL_ASSIGN_OR_RETURN(node, parse_call(std::move(node)));
      } else {
        return node;
      }
    }
  }

  Result<ExprPtr> parse_subscript(ExprPtr node) {
    const Token& token = next();
    if (token.value == ".") {
      const Token& attribute = next();
      if (attribute.kind == TokenKind::kName) {
        auto e = make(Expr::Kind::kAttribute, attribute.offset, std::move(node));
        e->name = attribute.value;
        return e;
      }
      if (attribute.kind != TokenKind::kInteger) return fail(attribute, "expected a name or a number after '.'");
      KESTREL_ASSIGN_OR_RETURN(int64_t index, parse_integer(attribute));
      auto key = std::make_unique<Expr>(Expr::Kind::kLiteral, attribute.offset);
      key->literal = Value(index);
      return make(Expr::Kind::kItem, attribute.offset, std::move(node), std::move(key));
    }
    // [expression] or [start:stop:step]
    ExprPtr parts[3];
    bool slice = false;
    if (!is_op(current(), ":")) {
      KESTREL_ASSIGN_OR_RETURN(parts[0], parse_expression(true));
    }
    if (skip_op(":")) {
      slice = true;
      if (!is_op(current(), ":") && !is_op(current(), "]")) {
        KESTREL_ASSIGN_OR_RETURN(parts[1], parse_expression(true));
      }
      if (skip_op(":") && !is_op(current(), "]")) {
        KESTREL_ASSIGN_OR_RETURN(parts[2], parse_expression(true));
      }
    }
    if (is_op(current(), ",")) return fail(current(), "subscripts with several values are not supported");
    KESTREL_RETURN_IF_ERROR(expect_op("]"));
    if (!slice) {
      if (!parts[0]) return fail(token, "empty subscript");
      return make(Expr::Kind::kItem, token.offset, std::move(node), std::move(parts[0]));
    }
    auto e = make(Expr::Kind::kSlice, token.offset, std::move(node));
    for (auto& part : parts) e->args.push_back(std::move(part));
    return e;
  }

  // "(" [args] [name=value ...] ")" into e->args (after what is already there) and e->keywords.
  Status parse_call_args(Expr& e) {
    const Token& open = next();  // (
    bool first = true;
    while (!is_op(current(), ")")) {
      if (!first) {
        KESTREL_RETURN_IF_ERROR(expect_op(","));
        if (is_op(current(), ")")) break;
      }
      first = false;
      if (is_op(current(), "*") || is_op(current(), "**"))
        return fail(current(), "*args and **kwargs in calls are not supported");
      if (current().kind == TokenKind::kName && is_op(look(), "=")) {
        Keyword keyword;
        keyword.name = next().value;
        next();  // =
        KESTREL_ASSIGN_OR_RETURN(keyword.value, parse_expression(true));
        e.keywords.push_back(std::move(keyword));
      } else {
        if (!e.keywords.empty()) return fail(current(), "positional argument follows keyword argument");
        KESTREL_ASSIGN_OR_RETURN(ExprPtr arg, parse_expression(true));
        e.args.push_back(std::move(arg));
      }
    }
    if (!skip_op(")")) return fail(open, "unclosed '('");
    return ok_status();
  }

  Result<ExprPtr> parse_call(ExprPtr node) {
    const size_t offset = node->offset;  // errors point at the function's name
    auto call = make(Expr::Kind::kCall, offset, std::move(node));
    KESTREL_RETURN_IF_ERROR(parse_call_args(*call));
    return call;
  }

  // One or more "| name(args)"; `inline_first`: the first filter has no leading "|".
  Result<ExprPtr> parse_filters(ExprPtr node, bool inline_first) {
    while (is_op(current(), "|") || inline_first) {
      if (!inline_first) next();
      inline_first = false;
      const Token& name = current();
      KESTREL_ASSIGN_OR_RETURN(std::string filter, expect_identifier());
      if (!is_filter(filter))
        return fail(name, is_unsupported_filter(filter) ? "the filter '" + filter + "' is not supported"
                                                        : "no filter named '" + filter + "'");
      auto e = std::make_unique<Expr>(Expr::Kind::kFilter, name.offset);
      e->name = filter;
      e->args.push_back(std::move(node));
      if (is_op(current(), "(")) KESTREL_RETURN_IF_ERROR(parse_call_args(*e));
      node = std::move(e);
    }
    return node;
  }

  Result<ExprPtr> parse_test(ExprPtr node) {
    next();  // is
    const bool negated = skip_name("not");
    const Token& name = current();
    KESTREL_ASSIGN_OR_RETURN(std::string test, expect_identifier());
    if (!is_test(test)) return fail(name, "no test named '" + test + "'");
    auto e = std::make_unique<Expr>(Expr::Kind::kTest, name.offset);
    e->name = test;
    e->negated = negated;
    e->args.push_back(std::move(node));
    const Token& t = current();
    if (is_op(t, "(")) {
      KESTREL_RETURN_IF_ERROR(parse_call_args(*e));
    } else if ((t.kind == TokenKind::kName || t.kind == TokenKind::kString || t.kind == TokenKind::kInteger ||
                t.kind == TokenKind::kFloat || is_op(t, "[") || is_op(t, "{")) &&
               !is_name(t, "else") && !is_name(t, "or") && !is_name(t, "and")) {
      if (is_name(t, "is")) return fail(t, "tests cannot be chained with 'is'");
      KESTREL_ASSIGN_OR_RETURN(ExprPtr arg, parse_primary());
      KESTREL_ASSIGN_OR_RETURN(arg, parse_postfix(std::move(arg)));
      e->args.push_back(std::move(arg));
    }
    return ExprPtr(std::move(e));
  }

  const std::vector<Token>& tokens_;
  const SourceMap& map_;
  size_t pos_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;
};

}  // namespace

Result<Body> parse_template(const std::vector<Token>& tokens, const SourceMap& map) {
  return Parser(tokens, map).parse();
}

}  // namespace kestrel::jinja
