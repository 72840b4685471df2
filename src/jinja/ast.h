// The parsed form of a template: expressions and statements (internal).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jinja/value.h"

namespace kestrel::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Keyword {
  std::string name;
  ExprPtr value;
};

struct Expr {
  enum class Kind {
    kLiteral,    // literal
    kName,       // name
    kList,       // args: elements
    kTuple,      // args: elements
    kDict,       // args: key, value, key, value, ...
    kAttribute,  // args[0].name
    kItem,       // args[0][args[1]]
    kSlice,      // args[0][args[1]:args[2]:args[3]], absent parts null
    kCall,       // args[0](args[1:], keywords)
    kFilter,     // args[0] | name(args[1:], keywords); args[0] is null in filter blocks
    kTest,       // args[0] is [not] name(args[1:], keywords)
    kNegate,     // -args[0]
    kPlus,       // +args[0]
    kNot,        // not args[0]
    kBinary,     // args[0] name args[1]; name one of + - * / // % ** ~
    kCompare,    // args[0] ops[0] args[1] ops[1] args[2] ...; ops: == != < <= > >= in notin
    kAnd,        // args[0] and args[1]
    kOr,         // args[0] or args[1]
    kCondition,  // args[1] if args[0] else args[2] (args[2] may be null)
  };

  Expr(Kind k, size_t at) : kind(k), offset(at) {}

  Kind kind;
  size_t offset;  // in the normalized source, for error positions
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<Keyword> keywords;
  std::vector<std::string> ops;
  bool negated = false;
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

// What a set or for statement assigns to: one name, several names (unpacking), or a
// namespace attribute (names[0].attribute).
struct Target {
  std::vector<std::string> names;
  std::string attribute;
  bool unpack = false;
};

struct Branch {
  ExprPtr test;
  Body body;
};

struct Param {
  std::string name;
  ExprPtr value;  // default value (macros) or assigned value (with); may be null
};

struct Node {
  enum class Kind {
    kText,         // text
    kOutput,       // {{ expr }}
    kIf,           // branches, else_body
    kFor,          // for target in expr [if condition] body [else else_body]
    kSet,          // set target = expr
    kSetBlock,     // set target [| filters in expr] body endset
    kMacro,        // macro text(params) body
    kFilterBlock,  // filter expr body endfilter
    kWith,         // with params body
    kBreak,
    kContinue,
    kScope,        // a block that renders its body as it is (generation)
  };

  Node(Kind k, size_t at) : kind(k), offset(at) {}

  Kind kind;
  size_t offset;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  Target target;
  std::vector<Branch> branches;
  std::vector<Param> params;
  Body body;
  Body else_body;
};

}  // namespace kestrel::jinja
