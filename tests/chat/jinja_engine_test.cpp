// The template engine's error reporting and its limits on untrusted templates: every failure
// is an error value naming where it happened, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "chat/jinja2_reference.h"
#include "kestrel/jinja/template.h"

namespace kestrel::jinja {
namespace {

using json = nlohmann::ordered_json;

Result<std::string> render(const std::string& source, const json& context = json::object(),
                           const RenderOptions& options = {}) {
  auto parsed = Template::parse(source);
  if (!parsed.ok()) return parsed.error();
  return parsed->render(context, options);
}

std::string error_of(const std::string& source, const json& context = json::object(),
                     const RenderOptions& options = {}) {
  auto result = render(source, context, options);
  EXPECT_FALSE(result.ok()) << "rendered: " << (result.ok() ? *result : "");
  return result.ok() ? "" : result.error().message();
}

TEST(JinjaErrors, ParseErrorsNameLineAndColumn) {
  auto parsed = Template::parse("first line\n  {{ 1 + }}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().message().rfind("line 2, column 10: ", 0), 0u) << parsed.error().message();

  parsed = Template::parse("ab\ncd {{ x | nosuch }}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message(), "line 2, column 11: no filter named 'nosuch'");

  // Columns count characters, not bytes.
  parsed = Template::parse("héllo {{ x is nosuch }}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message(), "line 1, column 15: no test named 'nosuch'");
}

TEST(JinjaErrors, UnclosedBlockNamesWhereItOpened) {
  const auto parsed = Template::parse("a\n{% for m in messages %}\n{% if m %}x{% endfor %}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message().find("'endfor'"), std::string::npos) << parsed.error().message();
  EXPECT_EQ(parsed.error().message().rfind("line 3, column ", 0), 0u) << parsed.error().message();

  const auto eof = Template::parse("{% if true %}\nnever closed");
  ASSERT_FALSE(eof.ok());
  EXPECT_NE(eof.error().message().find("opened at line 1, column 1"), std::string::npos) << eof.error().message();
}

TEST(JinjaErrors, UnsupportedTagsSaySo) {
  EXPECT_NE(Template::parse("{% include 'x' %}").error().message().find("'include' tag is not supported"),
            std::string::npos);
  EXPECT_NE(Template::parse("{{ x | truncate }}").error().message().find("'truncate' is not supported"),
            std::string::npos);
  EXPECT_NE(Template::parse("{% break %}").error().message().find("outside of a for loop"), std::string::npos);
}

TEST(JinjaErrors, RenderErrorsNameTheirPosition) {
  EXPECT_EQ(error_of("ok\n{{ messages[0].content.strip() }}", json{{"messages", json::array({json::object()})}}),
            "line 2, column 24: 'dict object' has no attribute 'content'");
  EXPECT_EQ(error_of("{{ 1 / 0 }}"), "line 1, column 6: division by zero");
}

TEST(JinjaErrors, RaiseExceptionEndsWithItsMessage) {
  const std::string message = error_of("{% if messages | length > 1 %}{{ raise_exception('Only one turn, please') }}{% endif %}",
                                       json{{"messages", json::array({1, 2})}});
  EXPECT_EQ(message, "line 1, column 34: Only one turn, please");
}

TEST(JinjaErrors, BadInputIsAnErrorNotACrash) {
  EXPECT_NE(Template::parse("ok \xff\xfe").error().message().find("not valid UTF-8"), std::string::npos);
  auto parsed = Template::parse("{{ x }}");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->render(json::array()).ok());  // the context must be an object
  json deep = 1;
  for (int i = 0; i < 400; ++i) deep = json::array({deep});
  const auto nested = parsed->render(json{{"x", deep}});
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().message().find("nests deeper"), std::string::npos);
}

TEST(JinjaLimits, DeepTemplateNestingIsRefusedAtParse) {
  const std::string parens = std::string(5000, '(') + "1" + std::string(5000, ')');
  auto parsed = Template::parse("{{ " + parens + " }}");
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.error().message().find("nests deeper"), std::string::npos);

  std::string blocks;
  for (int i = 0; i < 2000; ++i) blocks += "{% if true %}";
  EXPECT_FALSE(Template::parse(blocks).ok());
  std::string nots = "{{ ";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_FALSE(Template::parse(nots + "x }}").ok());
}

TEST(JinjaLimits, EndlessRecursionStopsAtTheCallDepth) {
  RenderOptions options;
  options.max_call_depth = 20;
  const std::string message = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", json::object(), options);
  EXPECT_NE(message.find("macro calls nest deeper than 20"), std::string::npos) << message;
  // The default depth is also safe on the stack.
  EXPECT_FALSE(render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").ok());
}

TEST(JinjaLimits, OutputAndStringSizesAreBounded) {
  RenderOptions options;
  options.max_output_bytes = 1000;
  auto big = render("{% for i in range(100) %}0123456789abcdef{% endfor %}", json::object(), options);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().code(), ErrorCode::kCapacity);
  EXPECT_FALSE(render("{{ 'x' * 100000 }}", json::object(), options).ok());
  EXPECT_FALSE(render("{{ 'ab' * 9223372036854775807 }}").ok());
  EXPECT_FALSE(render("{{ [1, 2] * 9223372036854775807 }}").ok());
  EXPECT_FALSE(render("{% set ns = namespace(s='ab') %}{% for i in range(80) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}")
                   .ok());
  // Below the limit the same constructs render.
  EXPECT_EQ(*render("{{ 'ab' * 3 }}", json::object(), options), "ababab");
}

TEST(JinjaLimits, LongLoopsStopAtTheStepBudget) {
  RenderOptions options;
  options.max_steps = 100000;
  const std::string message =
      error_of("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", json::object(), options);
  EXPECT_NE(message.find("steps"), std::string::npos) << message;
}

TEST(JinjaLimits, NamespacesCannotNestWithoutBoundOrCycle) {
  EXPECT_NE(error_of("{% set ns = namespace(x=[]) %}{% for i in range(1000) %}{% set ns.x = [ns.x] %}{% endfor %}")
                .find("nest deeper"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.me = ns %}").find("cannot hold a namespace"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.all = [1, [ns]] %}").find("cannot hold a namespace"),
            std::string::npos);
}

TEST(JinjaRender, ObjectsKeepTheirMemberOrder) {
  const json context = json::parse(R"({"tool": {"zeta": 1, "alpha": {"y": 2, "b": 3}}})");
  EXPECT_EQ(*render("{{ tool | tojson }}|{% for k in tool %}{{ k }}{% endfor %}", context),
            "{\"zeta\": 1, \"alpha\": {\"y\": 2, \"b\": 3}}|zetaalpha");
}

TEST(JinjaRender, StrftimeNowReadsTheGivenClock) {
  RenderOptions options;
  options.now = 0;  // local time of the epoch: 1970 (or 1969 west of UTC)
  const auto year = render("{{ strftime_now('%Y') }}", json::object(), options);
  ASSERT_TRUE(year.ok());
  EXPECT_TRUE(*year == "1970" || *year == "1969") << *year;
}

TEST(JinjaRender, ATemplateRendersManyTimes) {
  auto parsed = Template::parse("{% for m in messages %}{{ m }};{% endfor %}");
  ASSERT_TRUE(parsed.ok());
  for (int i = 0; i < 3; ++i) {
    json messages = json::array();
    for (int j = 0; j <= i; ++j) messages.push_back(j);
    std::string expected;
    for (int j = 0; j <= i; ++j) expected += std::to_string(j) + ";";
    EXPECT_EQ(*parsed->render(json{{"messages", messages}}), expected);
  }
}

// Templates are untrusted: randomly damaged corpus templates must fail with positioned errors
// or render, never crash (the sanitizer build runs this too).
TEST(JinjaRobustness, DamagedTemplatesFailCleanly) {
  const auto conversations = json::parse(testing::read_text_file(testing::corpus_dir() + "/conversations.json"));
  json context = {{"messages", conversations[4]["messages"]}, {"tools", conversations[4]["tools"]},
                  {"add_generation_prompt", true}, {"bos_token", "<s>"}, {"eos_token", "</s>"}};
  const std::string pieces[] = {"{{", "}}", "{%", "%}", "{#", "#}", "(", ")", "[", "]", "'", "\"", "|", "-", "~",
                                "if", "for", "endfor", "set", "\n", " ", "é", "\\"};
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ull + 1442695040888963407ull) >> 33; };
  int parsed = 0, failed = 0;
  for (const std::string& file : testing::corpus_template_files()) {
    const std::string source = testing::read_text_file(testing::corpus_dir() + "/templates/" + file);
    for (int round = 0; round < 60; ++round) {
      std::string damaged = source;
      for (int edit = 0; edit < 3; ++edit) {
        const size_t at = next() % (damaged.size() + 1);
        switch (next() % 3) {
          case 0: damaged.erase(at, 1 + next() % 8); break;
          case 1: damaged.insert(at, pieces[next() % std::size(pieces)]); break;
          default: if (!damaged.empty()) damaged.insert(at, damaged.substr(next() % damaged.size(), next() % 24)); break;
        }
      }
      auto t = Template::parse(damaged);
      if (!t.ok()) {
        ++failed;
        EXPECT_EQ(t.error().message().rfind("line ", 0), 0u) << t.error().message();
        continue;
      }
      ++parsed;
      RenderOptions options;
      options.max_steps = 200000;
      auto out = t->render(context, options);
      if (!out.ok()) {
        EXPECT_EQ(out.error().message().rfind("line ", 0), 0u) << out.error().message();
      }
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(failed, 0);
}

}  // namespace
}  // namespace kestrel::jinja
