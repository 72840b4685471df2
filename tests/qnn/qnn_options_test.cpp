#include <gtest/gtest.h>

#include <string>

#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/backends/qnn/soc.h"

namespace kestrel::qnn {
namespace {

using exporter::OptionMap;
using namespace std::string_literals;

std::string text(const CompileSpecMap& specs, const std::string& key) { return compile_spec_text(specs, key); }

Result<CompileSpecMap> specs_for(const OptionMap& given) {
  auto partitioner = QnnPartitioner::from_options(given);
  if (!partitioner.ok()) return partitioner.error();
  return partitioner->compile_specs();
}

TEST(QnnSoc, TableHasKnownArchitectures) {
  struct Expect {
    const char* name;
    int arch;
  };
  for (auto [name, arch] : {Expect{"SM8450", 69}, Expect{"SM8475", 69}, Expect{"SM8550", 73}, Expect{"SM8650", 75},
                            Expect{"SM8750", 79}, Expect{"SSG2115P", 73}, Expect{"QCS6490", 68},
                            Expect{"QCM6490", 68}, Expect{"SA8295", 68}, Expect{"SM8850", 81}}) {
    const QnnSocInfo* soc = find_qnn_soc(name);
    ASSERT_NE(soc, nullptr) << name;
    EXPECT_EQ(soc->htp_arch, arch) << name;
    EXPECT_GT(soc->vtcm_mb, 0) << name;
  }
  EXPECT_EQ(find_qnn_soc("SM9999"), nullptr);
  EXPECT_EQ(find_qnn_soc("sm8650"), nullptr);
  auto table = qnn_soc_table();
  for (size_t i = 1; i < table.size(); ++i) EXPECT_LT(table[i - 1].name, table[i].name);
}

TEST(QnnOptions, EveryOptionHasTypeDefaultAndHelp) {
  const auto& table = qnn_option_table();
  EXPECT_EQ(table.backend(), "qnn");
  const std::vector<std::string> expected = {
      "skip_node_op_set", "skip_node_id_set", "skip_mutable_buffer", "soc_model", "backend",
      "htp_performance_mode", "precision", "use_fp16", "shared_buffer", "online_prepare", "use_multi_contexts",
      "use_weight_sharing", "use_dlbc", "use_slc_allocator", "profile_level", "debug", "saver",
      "dump_intermediate_outputs", "is_from_context_binary", "use_mha2sha", "embed_parameters"};
  ASSERT_EQ(table.specs().size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const auto& spec = table.specs()[i];
    EXPECT_EQ(spec.name, expected[i]);
    EXPECT_FALSE(spec.help.empty()) << spec.name;
    const bool partitioner = i < 3;
    EXPECT_EQ(spec.destination, partitioner ? exporter::OptionDestination::kPartitioner
                                            : exporter::OptionDestination::kCompileSpec)
        << spec.name;
  }
  // Defaults resolve cleanly (the table is self-consistent).
  auto resolved = table.resolve({});
  ASSERT_TRUE(resolved.ok()) << resolved.error().to_string();
  const std::string listing = table.format_table();
  for (const auto& name : expected) EXPECT_NE(listing.find(name), std::string::npos) << name;
  EXPECT_NE(listing.find("extreme_power_saver"), std::string::npos);
}

TEST(QnnOptions, BackendExporterIsQnn) {
  auto exporter = make_qnn_backend_exporter();
  ASSERT_NE(exporter, nullptr);
  EXPECT_EQ(exporter->id(), "qnn");
  EXPECT_EQ(&exporter->options(), &qnn_option_table());
}

TEST(QnnOptions, DefaultsBuildReadableSpecs) {
  auto specs = specs_for({});
  ASSERT_TRUE(specs.ok()) << specs.error().to_string();
  EXPECT_EQ(text(*specs, "spec_version"), "1");
  EXPECT_EQ(text(*specs, "soc_model"), "SM8650");
  EXPECT_EQ(text(*specs, "htp_arch"), "v75");
  EXPECT_EQ(text(*specs, "vtcm_mb"), "8");
  EXPECT_EQ(text(*specs, "backend"), "htp");
  EXPECT_EQ(text(*specs, "htp_performance_mode"), "burst");
  EXPECT_EQ(text(*specs, "precision"), "fp16");
  EXPECT_EQ(text(*specs, "profile_level"), "0");
  for (const char* flag : {"shared_buffer", "online_prepare", "use_multi_contexts", "use_weight_sharing", "use_dlbc",
                           "use_slc_allocator", "debug", "saver", "dump_intermediate_outputs",
                           "is_from_context_binary", "use_mha2sha"}) {
    EXPECT_EQ(text(*specs, flag), "false") << flag;
  }
  EXPECT_EQ(text(*specs, "embed_parameters"), "false") << "payloads reference the program's constants";
  EXPECT_EQ(specs->count("use_fp16"), 0u) << "folded into precision";
  // Every value is printable text, so `kestrel inspect` can show it.
  for (const auto& [key, bytes] : *specs) {
    for (uint8_t b : bytes) EXPECT_TRUE(b >= 0x20 && b < 0x7f) << key;
  }
}

TEST(QnnOptions, EachBoolOptionReachesItsSpec) {
  for (const char* flag : {"shared_buffer", "online_prepare", "use_multi_contexts", "use_weight_sharing", "use_dlbc",
                           "use_slc_allocator", "debug", "saver", "dump_intermediate_outputs",
                           "is_from_context_binary", "use_mha2sha"}) {
    auto specs = specs_for({{flag, true}});
    ASSERT_TRUE(specs.ok()) << flag << ": " << specs.error().to_string();
    for (const auto& [key, bytes] : *specs) {
      if (key != "embed_parameters" && bytes == std::vector<uint8_t>{'t', 'r', 'u', 'e'}) {
        EXPECT_EQ(key, flag);
      }
    }
    EXPECT_EQ(text(*specs, flag), "true") << flag;
  }
}

TEST(QnnOptions, SocModelSetsArchitecture) {
  auto specs = specs_for({{"soc_model", "SM8450"s}});
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(text(*specs, "soc_model"), "SM8450");
  EXPECT_EQ(text(*specs, "htp_arch"), "v69");
  specs = specs_for({{"soc_model", "SSG2115P"s}});
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(text(*specs, "htp_arch"), "v73");
  EXPECT_EQ(text(*specs, "vtcm_mb"), "2");
}

TEST(QnnOptions, UnknownSocIsAnError) {
  auto specs = specs_for({{"soc_model", "SM9999"s}});
  ASSERT_FALSE(specs.ok());
  EXPECT_NE(specs.error().message().find("SM9999"), std::string::npos) << specs.error().message();
  // The builder rejects it too, independent of the option table's choices.
  auto built = QnnCompileSpecBuilder().soc_model("SM1234").build();
  ASSERT_FALSE(built.ok());
  EXPECT_NE(built.error().message().find("unknown soc_model 'SM1234'"), std::string::npos);
  EXPECT_NE(built.error().message().find("SM8650"), std::string::npos) << "lists the known ones";
}

TEST(QnnOptions, PerformanceModes) {
  for (const char* mode : kHtpPerformanceModes) {
    auto specs = specs_for({{"htp_performance_mode", std::string(mode)}});
    ASSERT_TRUE(specs.ok()) << mode;
    EXPECT_EQ(text(*specs, "htp_performance_mode"), mode);
  }
  EXPECT_FALSE(specs_for({{"htp_performance_mode", "turbo"s}}).ok());
  EXPECT_FALSE(QnnCompileSpecBuilder().htp_performance_mode("turbo").build().ok());
}

TEST(QnnOptions, ProfileLevelRange) {
  for (int64_t level = 0; level <= 3; ++level) {
    auto specs = specs_for({{"profile_level", level}});
    ASSERT_TRUE(specs.ok());
    EXPECT_EQ(text(*specs, "profile_level"), std::to_string(level));
  }
  EXPECT_FALSE(specs_for({{"profile_level", int64_t{4}}}).ok());
  EXPECT_FALSE(specs_for({{"profile_level", int64_t{-1}}}).ok());
  auto built = QnnCompileSpecBuilder().profile_level(7).build();
  ASSERT_FALSE(built.ok());
  EXPECT_EQ(built.error().code(), ErrorCode::kOutOfRange);
}

TEST(QnnOptions, PrecisionAndUseFp16) {
  auto fp16 = specs_for({{"precision", "fp16"s}});
  ASSERT_TRUE(fp16.ok());
  EXPECT_EQ(text(*fp16, "precision"), "fp16");
  auto contradiction = specs_for({{"precision", "fp16"s}, {"use_fp16", false}});
  ASSERT_FALSE(contradiction.ok());
  EXPECT_NE(contradiction.error().message().find("use_fp16"), std::string::npos);
  // Quantized precision needs encodings the graphs do not carry: a clear error, not a bad delegate.
  for (const OptionMap& quantized : {OptionMap{{"precision", "quantized"s}}, OptionMap{{"use_fp16", false}}}) {
    auto specs = specs_for(quantized);
    ASSERT_FALSE(specs.ok());
    EXPECT_NE(specs.error().message().find("quantiz"), std::string::npos) << specs.error().message();
  }
  EXPECT_FALSE(specs_for({{"precision", "int4"s}}).ok());
}

TEST(QnnOptions, BackendMustBeHtp) {
  EXPECT_TRUE(specs_for({{"backend", "htp"s}}).ok());
  EXPECT_FALSE(specs_for({{"backend", "gpu"s}}).ok());
  EXPECT_FALSE(QnnCompileSpecBuilder().backend("dsp").build().ok());
}

TEST(QnnOptions, OnlinePrepareWithMultiContextsIsAnError) {
  auto specs = specs_for({{"online_prepare", true}, {"use_multi_contexts", true}});
  ASSERT_FALSE(specs.ok());
  EXPECT_NE(specs.error().message().find("online_prepare"), std::string::npos);
  EXPECT_NE(specs.error().message().find("use_multi_contexts"), std::string::npos);
  EXPECT_FALSE(specs_for({{"online_prepare", true}, {"is_from_context_binary", true}}).ok());
  EXPECT_TRUE(specs_for({{"online_prepare", true}}).ok());
  EXPECT_TRUE(specs_for({{"use_multi_contexts", true}}).ok());
}

TEST(QnnOptions, EmbedParameters) {
  auto specs = specs_for({{"embed_parameters", true}});
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(text(*specs, "embed_parameters"), "true");
  auto parsed = parse_qnn_compile_specs(*specs);
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE(parsed->embed_parameters);
}

TEST(QnnOptions, WeightSharingNeedsV73) {
  EXPECT_TRUE(specs_for({{"use_weight_sharing", true}, {"soc_model", "SM8550"s}}).ok());
  auto old = specs_for({{"use_weight_sharing", true}, {"soc_model", "SM8450"s}});
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message().find("v73"), std::string::npos);
}

TEST(QnnOptions, UnknownNamesAndWrongTypesAreErrors) {
  auto unknown = QnnPartitioner::from_options({{"soc_modle", "SM8650"s}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message().find("soc_modle"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("soc_model"), std::string::npos) << "suggests the closest name";
  auto wrong = QnnPartitioner::from_options({{"profile_level", "high"s}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message().find("profile_level"), std::string::npos);
}

TEST(QnnOptions, PartitionerOptionsAreRouted) {
  auto partitioner = QnnPartitioner::from_options({{"skip_node_op_set", std::set<std::string>{"index_copy"}},
                                                  {"skip_node_id_set", std::set<int64_t>{3, 5}},
                                                  {"skip_mutable_buffer", true}});
  ASSERT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  EXPECT_EQ(partitioner->options().skip_node_op_set, std::set<std::string>{"index_copy"});
  EXPECT_EQ(partitioner->options().skip_node_id_set, (std::set<int64_t>{3, 5}));
  EXPECT_TRUE(partitioner->options().skip_mutable_buffer);
  EXPECT_EQ(partitioner->backend().id(), "qnn");
  EXPECT_EQ(partitioner->compile_specs().count("skip_node_op_set"), 0u);
}

TEST(QnnOptions, CliStringsParseByType) {
  auto parsed = qnn_option_table().parse_cli({"soc_model=SM8550", "skip_node_op_set=index_copy,argmax",
                                              "profile_level=2", "shared_buffer=true"});
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  auto specs = specs_for(*parsed);
  ASSERT_TRUE(specs.ok());
  EXPECT_EQ(text(*specs, "soc_model"), "SM8550");
  EXPECT_EQ(text(*specs, "profile_level"), "2");
  EXPECT_EQ(text(*specs, "shared_buffer"), "true");
}

TEST(QnnCompileSpecs, RoundTripThroughTheParser) {
  QnnCompileSpecBuilder builder;
  builder.soc_model("SM8750")
      .htp_performance_mode("power_saver")
      .shared_buffer(true)
      .use_multi_contexts(true)
      .use_weight_sharing(true)
      .use_dlbc(true)
      .use_slc_allocator(true)
      .profile_level(3)
      .debug(true)
      .saver(true)
      .dump_intermediate_outputs(true)
      .is_from_context_binary(true)
      .use_mha2sha(true);
  auto specs = builder.build();
  ASSERT_TRUE(specs.ok()) << specs.error().to_string();
  EXPECT_EQ(text(*specs, "htp_arch"), "v79");
  auto parsed = parse_qnn_compile_specs(*specs);
  ASSERT_TRUE(parsed.ok()) << parsed.error().to_string();
  EXPECT_EQ(parsed->soc_model, "SM8750");
  EXPECT_EQ(parsed->htp_arch, 79);
  EXPECT_EQ(parsed->htp_performance_mode, "power_saver");
  EXPECT_TRUE(parsed->shared_buffer && parsed->use_multi_contexts && parsed->use_weight_sharing &&
              parsed->use_dlbc && parsed->use_slc_allocator && parsed->debug && parsed->saver &&
              parsed->dump_intermediate_outputs && parsed->is_from_context_binary && parsed->use_mha2sha);
  EXPECT_FALSE(parsed->online_prepare);
  EXPECT_EQ(parsed->profile_level, 3);
}

TEST(QnnCompileSpecs, ParserRejectsDamage) {
  auto good = QnnCompileSpecBuilder().build();
  ASSERT_TRUE(good.ok());
  auto missing = *good;
  missing.erase("soc_model");
  EXPECT_FALSE(parse_qnn_compile_specs(missing).ok());
  auto unknown = *good;
  unknown["turbo"] = {'1'};
  auto bad = parse_qnn_compile_specs(unknown);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("turbo"), std::string::npos);
  auto not_bool = *good;
  not_bool["debug"] = {'y', 'e', 's'};
  EXPECT_FALSE(parse_qnn_compile_specs(not_bool).ok());
  auto wrong_arch = *good;
  wrong_arch["htp_arch"] = {'v', '6', '8'};
  EXPECT_FALSE(parse_qnn_compile_specs(wrong_arch).ok());
  auto newer = *good;
  newer["spec_version"] = {'9'};
  auto version = parse_qnn_compile_specs(newer);
  ASSERT_FALSE(version.ok());
  EXPECT_EQ(version.error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace kestrel::qnn
