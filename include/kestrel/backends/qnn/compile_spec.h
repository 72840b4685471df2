// QNN compile specs: the typed options a delegate is compiled with, and the builder that turns
// them into the key -> bytes map stored with each delegate in the program. Every value is
// readable text ("SM8650", "burst", "true", "2") so `kestrel inspect` prints them as they are.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kestrel/core/result.h"
#include "kestrel/export/options.h"

namespace kestrel::qnn {

using CompileSpecMap = std::map<std::string, std::vector<uint8_t>>;

// Version of the compile-spec key set; stored under "spec_version".
inline constexpr int64_t kQnnCompileSpecVersion = 1;

inline constexpr const char* kHtpPerformanceModes[] = {
    "burst",        "sustained_high_performance", "high_performance",
    "balanced",     "low_balanced",               "power_saver",
    "low_power_saver", "high_power_saver",        "extreme_power_saver"};

struct QnnCompileOptions {
  std::string soc_model = "SM8650";
  std::string backend = "htp";
  std::string htp_performance_mode = "burst";
  std::string precision = "fp16";  // "fp16" or "quantized"
  bool shared_buffer = false;
  bool online_prepare = false;
  bool use_multi_contexts = false;
  bool use_weight_sharing = false;
  bool use_dlbc = false;
  bool use_slc_allocator = false;
  int64_t profile_level = 0;  // 0 off, 1 basic, 2 detailed, 3 optrace
  bool debug = false;
  bool saver = false;
  bool dump_intermediate_outputs = false;
  bool is_from_context_binary = false;
  bool use_mha2sha = false;
  // False (default): payloads reference weights and constant tables, which the delegate reads
  // at init from the program's shared, mapped constant segment (one copy for every method).
  // True: each payload carries its own copy.
  bool embed_parameters = false;

  // Derived from soc_model by validate(); written to the specs for the delegate's convenience.
  int htp_arch = 0;
  int vtcm_mb = 0;

  // Checks every field and the cross-option rules (unknown SoC, online_prepare with
  // use_multi_contexts, ...) and fills the derived fields.
  Status validate();
};

class QnnCompileSpecBuilder {
 public:
  QnnCompileSpecBuilder() = default;
  explicit QnnCompileSpecBuilder(QnnCompileOptions options) : options_(std::move(options)) {}

  // Reads the resolved compile-spec options of the QNN option table (see qnn_partitioner.h).
  // `use_fp16=false` selects quantized precision unless `precision` says fp16, which is a
  // contradiction and an error.
  static Result<QnnCompileSpecBuilder> from_options(const exporter::OptionMap& compile_spec_options);

  QnnCompileSpecBuilder& soc_model(std::string value);
  QnnCompileSpecBuilder& backend(std::string value);
  QnnCompileSpecBuilder& htp_performance_mode(std::string value);
  QnnCompileSpecBuilder& precision(std::string value);
  QnnCompileSpecBuilder& shared_buffer(bool value);
  QnnCompileSpecBuilder& online_prepare(bool value);
  QnnCompileSpecBuilder& use_multi_contexts(bool value);
  QnnCompileSpecBuilder& use_weight_sharing(bool value);
  QnnCompileSpecBuilder& use_dlbc(bool value);
  QnnCompileSpecBuilder& use_slc_allocator(bool value);
  QnnCompileSpecBuilder& profile_level(int64_t value);
  QnnCompileSpecBuilder& debug(bool value);
  QnnCompileSpecBuilder& saver(bool value);
  QnnCompileSpecBuilder& dump_intermediate_outputs(bool value);
  QnnCompileSpecBuilder& is_from_context_binary(bool value);
  QnnCompileSpecBuilder& use_mha2sha(bool value);
  QnnCompileSpecBuilder& embed_parameters(bool value);

  const QnnCompileOptions& options() const { return options_; }
  // Validates, then serializes every option (and htp_arch, vtcm_mb, spec_version) as text.
  Result<CompileSpecMap> build() const;

 private:
  QnnCompileOptions options_;
};

// The inverse of build(), for the runtime delegate: every key must be present and well formed;
// unknown keys are an error (they would mean a newer exporter).
Result<QnnCompileOptions> parse_qnn_compile_specs(const CompileSpecMap& specs);

// Text of one compile-spec value ("" when the key is absent).
std::string compile_spec_text(const CompileSpecMap& specs, const std::string& key);

}  // namespace kestrel::qnn
