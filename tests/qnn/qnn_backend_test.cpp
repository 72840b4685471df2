#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/qnn_backend.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/export/checkpoint.h"
#include "kestrel/export/exporter.h"
#include "kestrel/fixtures/checkpoint_writer.h"
#include "kestrel/kernels/portable.h"
#include "kestrel/program/loaded_program.h"
#include "kestrel/program/writer.h"
#include "kestrel/runtime/method.h"

namespace kestrel::qnn {
namespace {

class QnnBackendTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv(kQnnHtpLibraryEnv); }
  void TearDown() override { unsetenv(kQnnHtpLibraryEnv); }
};

std::vector<uint8_t> any_payload() { return {'K', 'Q', 'N', 'N', 'P', 'A', 'Y', 0}; }

QnnBackendOptions library(std::string path) {
  QnnBackendOptions options;
  options.library = std::move(path);
  return options;
}

TEST_F(QnnBackendTest, UnavailableWithoutTheHtpLibrary) {
  auto backend = make_qnn_backend(library("/nonexistent/libQnnHtp.so"));
  EXPECT_EQ(backend->id(), "qnn");
  Status status = backend->is_available();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(status.error().message().find("'qnn'"), std::string::npos) << status.error().message();
  EXPECT_NE(status.error().message().find("/nonexistent/libQnnHtp.so"), std::string::npos);
  EXPECT_NE(status.error().message().find(kQnnHtpLibraryEnv), std::string::npos) << "says how to fix it";
}

TEST_F(QnnBackendTest, InitNamesTheBackendAndTheMissingLibrary) {
  auto backend = make_qnn_backend();  // default: libQnnHtp.so, not on this host
  auto specs = QnnCompileSpecBuilder().build();
  ASSERT_TRUE(specs.ok());
  auto instance = backend->init(any_payload(), *specs, {});
  ASSERT_FALSE(instance.ok());
  EXPECT_NE(instance.error().message().find("qnn"), std::string::npos);
  EXPECT_NE(instance.error().message().find("libQnnHtp.so"), std::string::npos) << instance.error().message();
}

TEST_F(QnnBackendTest, EnvironmentOverridesTheLibraryPath) {
  setenv(kQnnHtpLibraryEnv, "/elsewhere/libQnnHtp.so", 1);
  Status status = make_qnn_backend()->is_available();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("/elsewhere/libQnnHtp.so"), std::string::npos);
}

TEST_F(QnnBackendTest, LibraryThatIsNotQnnIsRejected) {
  Status status = make_qnn_backend(library(KESTREL_CDSPRPC_SHIM))->is_available();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message().find("QnnInterface_getProviders"), std::string::npos);
}

TEST_F(QnnBackendTest, BuildWithoutSdkSaysSo) {
  if (qnn_sdk_built()) GTEST_SKIP() << "this build has the SDK delegate";
  setenv(kQnnHtpLibraryEnv, KESTREL_QNN_HTP_SHIM, 1);
  auto backend = make_qnn_backend();
  Status status = backend->is_available();
  ASSERT_FALSE(status.ok());
  EXPECT_EQ(status.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(status.error().message().find("QNN_SDK_ROOT"), std::string::npos) << status.error().message();
  auto instance = backend->init(any_payload(), {}, {});
  ASSERT_FALSE(instance.ok());
  EXPECT_NE(instance.error().message().find("QNN_SDK_ROOT"), std::string::npos);
}

TEST_F(QnnBackendTest, RegistersUnderItsId) {
  runtime::BackendRegistry registry;
  register_qnn_backend(registry);
  auto found = registry.find("qnn");
  ASSERT_TRUE(found.ok());
  EXPECT_EQ((*found)->id(), "qnn");
}

// Exports a tiny decoder with the QNN partitioner (cache updates on the CPU) and loads it: the
// program needs the QNN delegate, so loading a method fails with the backend's reason.
TEST_F(QnnBackendTest, ProgramThatNeedsQnnFailsToLoadWithTheReason) {
  const std::string dir = std::string(KESTREL_TEST_BINARY_DIR) + "/qnn_fixture_model";
  std::filesystem::remove_all(dir);
  fixtures::FixtureConfig config;
  config.num_layers = 1;
  config.max_position_embeddings = 64;
  ASSERT_TRUE(fixtures::write_hf_checkpoint(dir, config).ok());
  auto checkpoint = exporter::load_checkpoint(dir);
  ASSERT_TRUE(checkpoint.ok()) << checkpoint.error().to_string();

  auto partitioner = QnnPartitioner::from_options(
      {{"skip_node_op_set", std::set<std::string>{"index_copy"}}, {"soc_model", std::string("SM8650")}});
  ASSERT_TRUE(partitioner.ok()) << partitioner.error().to_string();
  exporter::ExportOptions options;
  options.prefill_step = 4;
  options.partitioners.push_back(std::make_shared<const exporter::Partitioner>(std::move(*partitioner)));
  exporter::ExportReport report;
  auto spec = exporter::export_program(*checkpoint, options, &report);
  ASSERT_TRUE(spec.ok()) << spec.error().to_string();
  ASSERT_FALSE(spec->delegates.empty());
  for (const auto& delegate : spec->delegates) {
    EXPECT_EQ(delegate.backend_id, "qnn");
    EXPECT_EQ(compile_spec_text(delegate.compile_specs, "soc_model"), "SM8650");
  }
  for (const auto& method : report.methods) {
    ASSERT_EQ(method.pipeline.partitions.size(), 1u);
    EXPECT_GT(method.pipeline.partitions[0].delegated_nodes, 0) << method.name;
    EXPECT_EQ(method.pipeline.partitions[0].portable_ops.count("index_copy"), 1u) << method.name;
  }

  auto bytes = program::serialize_program(*spec);
  ASSERT_TRUE(bytes.ok()) << bytes.error().to_string();
  auto loaded = program::LoadedProgram::load_bytes(*bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  auto registry = std::make_shared<runtime::BackendRegistry>();
  register_qnn_backend(*registry);
  auto program = runtime::Program::from_loaded(*loaded, kernels::portable_kernel_registry(), registry);
  ASSERT_TRUE(program.ok()) << program.error().to_string();
  for (const auto& name : (*program)->method_names()) {
    auto method = (*program)->load_method(name);
    ASSERT_FALSE(method.ok()) << name;
    EXPECT_NE(method.error().message().find("qnn"), std::string::npos) << method.error().message();
    EXPECT_NE(method.error().message().find("libQnnHtp.so"), std::string::npos) << method.error().message();
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kestrel::qnn
