#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "export/test_backend.h"
#include "kestrel/export/options.h"

namespace kestrel::exporter {
namespace {

using testing::test_backend_option_specs;

OptionTable table() { return OptionTable("qnn", test_backend_option_specs()); }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(Options, ResolveFillsDefaultsAndRoutesByDestination) {
  auto t = table();
  auto resolved = t.resolve({{"soc_model", std::string("SM8550")}, {"skip_node_op_set", std::set<std::string>{"linear"}}});
  ASSERT_TRUE(resolved.ok()) << resolved.error().to_string();
  EXPECT_EQ(resolved->size(), t.specs().size());
  EXPECT_EQ(std::get<std::string>(resolved->at("soc_model")), "SM8550");
  EXPECT_EQ(std::get<int64_t>(resolved->at("profile_level")), 0);
  EXPECT_EQ(std::get<bool>(resolved->at("debug")), false);

  auto partitioner = t.for_destination(*resolved, OptionDestination::kPartitioner);
  auto compile = t.for_destination(*resolved, OptionDestination::kCompileSpec);
  EXPECT_EQ(partitioner.size(), 3u);
  EXPECT_EQ(compile.size(), 3u);
  EXPECT_TRUE(partitioner.count("skip_node_op_set"));
  EXPECT_TRUE(partitioner.count("skip_node_id_set"));
  EXPECT_TRUE(partitioner.count("skip_mutable_buffer"));
  EXPECT_TRUE(compile.count("soc_model"));
  EXPECT_TRUE(compile.count("debug"));
  EXPECT_FALSE(compile.count("skip_node_op_set"));
  EXPECT_EQ(std::get<std::set<std::string>>(partitioner.at("skip_node_op_set")), std::set<std::string>{"linear"});
}

TEST(Options, UnknownNameListsValidNamesAndClosestMatch) {
  auto t = table();
  auto resolved = t.resolve({{"sco_model", std::string("SM8550")}});
  ASSERT_FALSE(resolved.ok());
  const std::string& message = resolved.error().message();
  EXPECT_EQ(resolved.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(contains(message, "'sco_model'")) << message;
  EXPECT_TRUE(contains(message, "'qnn'")) << message;
  EXPECT_TRUE(contains(message, "did you mean 'soc_model'?")) << message;
  for (const auto& spec : t.specs()) EXPECT_TRUE(contains(message, spec.name)) << spec.name << ": " << message;

  auto far = t.resolve({{"frobnicate", true}});
  ASSERT_FALSE(far.ok());
  EXPECT_FALSE(contains(far.error().message(), "did you mean")) << far.error().message();
  EXPECT_TRUE(contains(far.error().message(), "skip_mutable_buffer"));

  // The CLI and JSON parsers report unknown names the same way.
  auto cli = t.parse_cli({"skip_node_opset=linear"});
  ASSERT_FALSE(cli.ok());
  EXPECT_TRUE(contains(cli.error().message(), "did you mean 'skip_node_op_set'?")) << cli.error().message();
  auto json = t.parse_json(nlohmann::json{{"DEBUG", true}});
  ASSERT_FALSE(json.ok());
  EXPECT_TRUE(contains(json.error().message(), "did you mean 'debug'?")) << json.error().message();
}

TEST(Options, ClosestMatch) {
  std::vector<std::string> names{"soc_model", "debug", "profile_level", "use_fp16"};
  EXPECT_EQ(closest_match("soc_modle", names), "soc_model");
  EXPECT_EQ(closest_match("SOC_MODEL", names), "soc_model");
  EXPECT_EQ(closest_match("debg", names), "debug");
  EXPECT_EQ(closest_match("use_fp32", names), "use_fp16");
  EXPECT_EQ(closest_match("profile_levl", names), "profile_level");
  EXPECT_EQ(closest_match("xyz", names), "");
  EXPECT_EQ(closest_match("completely_different", names), "");
  EXPECT_EQ(closest_match("debug", {}), "");
}

TEST(Options, WrongTypeNamesOptionExpectedTypeAndValue) {
  auto t = table();
  auto resolved = t.resolve({{"profile_level", std::string("high")}});
  ASSERT_FALSE(resolved.ok());
  const std::string& message = resolved.error().message();
  EXPECT_TRUE(contains(message, "'profile_level'")) << message;
  EXPECT_TRUE(contains(message, "int")) << message;
  EXPECT_TRUE(contains(message, "high")) << message;

  auto cli = t.parse_cli({"debug=yes"});
  ASSERT_FALSE(cli.ok());
  EXPECT_TRUE(contains(cli.error().message(), "'debug'")) << cli.error().message();
  EXPECT_TRUE(contains(cli.error().message(), "bool"));
  EXPECT_TRUE(contains(cli.error().message(), "'yes'"));

  auto cli_int = t.parse_cli({"profile_level=2x"});
  ASSERT_FALSE(cli_int.ok());
  EXPECT_TRUE(contains(cli_int.error().message(), "expects int")) << cli_int.error().message();

  auto cli_set = t.parse_cli({"skip_node_id_set=1,two"});
  ASSERT_FALSE(cli_set.ok());
  EXPECT_TRUE(contains(cli_set.error().message(), "int set")) << cli_set.error().message();

  auto json = t.parse_json(nlohmann::json{{"debug", "true"}});
  ASSERT_FALSE(json.ok());
  EXPECT_TRUE(contains(json.error().message(), "expects bool")) << json.error().message();
  auto json_set = t.parse_json(nlohmann::json{{"skip_node_op_set", "linear"}});
  ASSERT_FALSE(json_set.ok());
  EXPECT_TRUE(contains(json_set.error().message(), "string set")) << json_set.error().message();
  auto json_float = t.parse_json(nlohmann::json{{"profile_level", 1.5}});
  EXPECT_FALSE(json_float.ok());
}

TEST(Options, ChoicesAndRangesAreChecked) {
  auto t = table();
  auto choice = t.resolve({{"soc_model", std::string("SM8560")}});
  ASSERT_FALSE(choice.ok());
  EXPECT_TRUE(contains(choice.error().message(), "'soc_model'")) << choice.error().message();
  EXPECT_TRUE(contains(choice.error().message(), "SM8550, SM8650, SM8750")) << choice.error().message();

  auto range = t.resolve({{"profile_level", int64_t{4}}});
  ASSERT_FALSE(range.ok());
  EXPECT_TRUE(contains(range.error().message(), "'profile_level'")) << range.error().message();
  EXPECT_TRUE(contains(range.error().message(), "[0, 3]")) << range.error().message();
  EXPECT_TRUE(t.resolve({{"profile_level", int64_t{3}}}).ok());
  EXPECT_FALSE(t.resolve({{"profile_level", int64_t{-1}}}).ok());
}

TEST(Options, ParseCliByDeclaredType) {
  auto t = table();
  auto parsed = t.parse_cli({"skip_node_op_set=index_copy,linear", "skip_node_id_set=3, 7,11", "debug=1",
                             "skip_mutable_buffer=false", "profile_level=2", "soc_model=SM8750"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(std::get<std::set<std::string>>(parsed->at("skip_node_op_set")),
            (std::set<std::string>{"index_copy", "linear"}));
  EXPECT_EQ(std::get<std::set<int64_t>>(parsed->at("skip_node_id_set")), (std::set<int64_t>{3, 7, 11}));
  EXPECT_EQ(std::get<bool>(parsed->at("debug")), true);
  EXPECT_EQ(std::get<bool>(parsed->at("skip_mutable_buffer")), false);
  EXPECT_EQ(std::get<int64_t>(parsed->at("profile_level")), 2);
  EXPECT_EQ(std::get<std::string>(parsed->at("soc_model")), "SM8750");
  EXPECT_EQ(parsed->size(), 6u);  // parse_cli does not fill defaults; resolve does
  EXPECT_TRUE(t.resolve(*parsed).ok());

  auto empty_set = t.parse_cli({"skip_node_op_set="});
  ASSERT_TRUE(empty_set.ok());
  EXPECT_TRUE(std::get<std::set<std::string>>(empty_set->at("skip_node_op_set")).empty());
  auto bools = t.parse_cli({"debug=TRUE", "skip_mutable_buffer=0"});
  ASSERT_TRUE(bools.ok());
  EXPECT_TRUE(std::get<bool>(bools->at("debug")));

  EXPECT_FALSE(t.parse_cli({"debug"}).ok());                       // no '='
  EXPECT_FALSE(t.parse_cli({"debug=true", "debug=false"}).ok());   // given twice
  // A parsed value that breaks a rule is caught by resolve.
  auto out_of_range = t.parse_cli({"profile_level=9"});
  ASSERT_TRUE(out_of_range.ok());
  EXPECT_FALSE(t.resolve(*out_of_range).ok());
}

TEST(Options, ParseJsonTypedValues) {
  auto t = table();
  auto object = nlohmann::json::parse(R"({
    "skip_node_op_set": ["index_copy", "linear"],
    "skip_node_id_set": [1, 2],
    "skip_mutable_buffer": true,
    "profile_level": 3,
    "soc_model": "SM8550"
  })");
  auto parsed = t.parse_json(object);
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(std::get<std::set<std::string>>(parsed->at("skip_node_op_set")),
            (std::set<std::string>{"index_copy", "linear"}));
  EXPECT_EQ(std::get<std::set<int64_t>>(parsed->at("skip_node_id_set")), (std::set<int64_t>{1, 2}));
  EXPECT_TRUE(std::get<bool>(parsed->at("skip_mutable_buffer")));
  EXPECT_EQ(std::get<int64_t>(parsed->at("profile_level")), 3);
  auto resolved = t.resolve(*parsed);
  ASSERT_TRUE(resolved.ok());
  EXPECT_FALSE(std::get<bool>(resolved->at("debug")));

  EXPECT_FALSE(t.parse_json(nlohmann::json::array({1, 2})).ok());
  EXPECT_FALSE(t.parse_json(nlohmann::json{{"skip_node_id_set", {1, "x"}}}).ok());
  EXPECT_TRUE(t.parse_json(nlohmann::json::object()).ok());
}

TEST(Options, TableDeclarationErrorsAreInternal) {
  OptionTable bad("b", {{"x", OptionDestination::kCompileSpec, OptionType::kInt, std::string("no"), "x", {}}});
  auto resolved = bad.resolve({});
  ASSERT_FALSE(resolved.ok());
  EXPECT_EQ(resolved.error().code(), ErrorCode::kInternal);
  OptionTable twice("b", {{"x", OptionDestination::kCompileSpec, OptionType::kBool, false, "x", {}},
                          {"x", OptionDestination::kCompileSpec, OptionType::kBool, false, "x", {}}});
  EXPECT_FALSE(twice.resolve({}).ok());
}

TEST(Options, FormatTableAndValueStrings) {
  auto t = table();
  std::string text = t.format_table();
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  ASSERT_EQ(lines.size(), t.specs().size() + 1);
  EXPECT_EQ(lines[0].rfind("name", 0), 0u);
  // Columns are aligned: "destination" starts at the same column in every row.
  const size_t column = lines[0].find("destination");
  ASSERT_NE(column, std::string::npos);
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    EXPECT_TRUE(line.compare(column, 11, "partitioner") == 0 || line.compare(column, 12, "compile_spec") == 0)
        << line;
  }
  EXPECT_TRUE(contains(text, "SM8650"));
  EXPECT_TRUE(contains(text, "one of: SM8550, SM8650, SM8750"));
  EXPECT_TRUE(contains(text, "range 0..3"));
  EXPECT_TRUE(contains(text, "string set"));

  EXPECT_EQ(option_value_to_string(OptionValue(true)), "true");
  EXPECT_EQ(option_value_to_string(OptionValue(int64_t{-3})), "-3");
  EXPECT_EQ(option_value_to_string(OptionValue(std::string("s"))), "s");
  EXPECT_EQ(option_value_to_string(OptionValue(std::set<std::string>{"b", "a"})), "a,b");
  EXPECT_EQ(option_value_to_string(OptionValue(std::set<int64_t>{2, 1})), "1,2");
  EXPECT_EQ(option_type_name(OptionType::kIntSet), "int set");
  EXPECT_EQ(option_type_name(OptionType::kBool), "bool");
}

}  // namespace
}  // namespace kestrel::exporter
