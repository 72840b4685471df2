// Kestrel's template engine against jinja2 itself: every corpus case is rendered by both and
// must agree byte for byte (or both must fail; raise_exception messages must match).
#include <gtest/gtest.h>

#include "chat/jinja2_reference.h"
#include "kestrel/jinja/template.h"

namespace kestrel::testing {
namespace {

struct Tally {
  int outputs = 0, raised = 0, failed = 0, syntax = 0;
};

void compare_case(const TemplateCase& c, const ReferenceResult& expected, Tally& tally) {
  SCOPED_TRACE(c.name);
  auto parsed = jinja::Template::parse(c.source);
  if (expected.kind == "syntax") {
    ++tally.syntax;
    ASSERT_FALSE(parsed.ok()) << "jinja2 refused to parse it: " << expected.error;
    EXPECT_EQ(parsed.error().code(), ErrorCode::kInvalidArgument);
    if (expected.line > 0) {
      EXPECT_NE(parsed.error().message().find("line " + std::to_string(expected.line) + ", column "),
                std::string::npos)
          << parsed.error().message() << " (jinja2: line " << expected.line << ": " << expected.error << ")";
    }
    return;
  }
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  jinja::RenderOptions options;
  options.now = kReferenceClock;
  auto rendered = parsed->render(c.context, options);
  if (expected.output) {
    ++tally.outputs;
    ASSERT_TRUE(rendered.ok()) << rendered.error().to_string();
    EXPECT_EQ(*rendered, *expected.output);
    return;
  }
  ASSERT_FALSE(rendered.ok()) << "jinja2 failed with \"" << expected.error << "\" but Kestrel rendered:\n"
                              << *rendered;
  if (expected.kind == "raise") {
    ++tally.raised;
    const std::string& message = rendered.error().message();
    const std::string suffix = ": " + expected.error;
    EXPECT_TRUE(message.size() >= suffix.size() &&
                message.compare(message.size() - suffix.size(), suffix.size(), suffix) == 0)
        << message;
  } else {
    ++tally.failed;
  }
}

Tally compare_with_jinja2(const std::vector<TemplateCase>& cases) {
  Tally tally;
  const auto reference = render_with_jinja2(cases);
  if (reference.size() != cases.size()) return tally;
  for (size_t i = 0; i < cases.size(); ++i) compare_case(cases[i], reference[i], tally);
  return tally;
}

TEST(JinjaCorpus, FeatureCasesMatchJinja2) {
  const auto cases = load_feature_cases();
  ASSERT_GE(cases.size(), 90u);
  const Tally tally = compare_with_jinja2(cases);
  // The corpus must keep exercising every outcome.
  EXPECT_GE(tally.outputs, 60);
  EXPECT_GE(tally.raised, 2);
  EXPECT_GE(tally.failed, 10);
  EXPECT_GE(tally.syntax, 8);
}

class ChatTemplateCorpus : public ::testing::TestWithParam<std::string> {};

TEST_P(ChatTemplateCorpus, ConversationsMatchJinja2) {
  const auto cases = load_conversation_cases(GetParam());
  ASSERT_GE(cases.size(), 20u);
  const Tally tally = compare_with_jinja2(cases);
  EXPECT_GE(tally.outputs, static_cast<int>(cases.size()) / 2) << "most conversations must render";
}

INSTANTIATE_TEST_SUITE_P(Templates, ChatTemplateCorpus, ::testing::ValuesIn(corpus_template_files()),
                         [](const auto& info) {
                           std::string name = info.param.substr(0, info.param.find('.'));
                           return name;
                         });

TEST(JinjaCorpus, CorpusCoversTheTemplateStyles) {
  const auto files = corpus_template_files();
  EXPECT_GE(files.size(), 9u);
}

}  // namespace
}  // namespace kestrel::testing
