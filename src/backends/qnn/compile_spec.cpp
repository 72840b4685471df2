#include "kestrel/backends/qnn/compile_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <set>

#include "kestrel/backends/qnn/soc.h"
#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

bool is_performance_mode(const std::string& mode) {
  return std::any_of(std::begin(kHtpPerformanceModes), std::end(kHtpPerformanceModes),
                     [&](const char* m) { return mode == m; });
}

std::vector<uint8_t> text_bytes(const std::string& text) { return {text.begin(), text.end()}; }
std::string bool_text(bool value) { return value ? "true" : "false"; }

template <typename T>
Result<T> get_option(const exporter::OptionMap& options, const std::string& name) {
  auto it = options.find(name);
  if (it == options.end()) {
    return make_error(ErrorCode::kInvalidArgument, "qnn compile spec: option '{}' is missing", name);
  }
  if (const T* value = std::get_if<T>(&it->second)) return *value;
  return make_error(ErrorCode::kInvalidArgument, "qnn compile spec: option '{}' has the wrong type",
                    name);
}

// Option names the builder reads besides the QnnCompileOptions fields.
constexpr const char* kUseFp16 = "use_fp16";

}  // namespace

Status QnnCompileOptions::validate() {
  const QnnSocInfo* soc = find_qnn_soc(soc_model);
  if (soc == nullptr) {
    return make_error(ErrorCode::kInvalidArgument, "qnn: unknown soc_model '{}' (known: {})", soc_model,
                      fmt::join(qnn_soc_names(), ", "));
  }
  htp_arch = soc->htp_arch;
  vtcm_mb = soc->vtcm_mb;
  if (backend != "htp") {
    return make_error(ErrorCode::kInvalidArgument, "qnn: backend '{}' is not supported (valid: htp)",
                      backend);
  }
  if (!is_performance_mode(htp_performance_mode)) {
    return make_error(ErrorCode::kInvalidArgument, "qnn: unknown htp_performance_mode '{}' (valid: {})",
                      htp_performance_mode, fmt::join(kHtpPerformanceModes, ", "));
  }
  if (precision == "quantized") {
    return make_error(ErrorCode::kUnsupported,
                      "qnn: precision 'quantized' needs per-tensor quantization encodings, which "
                      "Kestrel graphs do not carry; export with precision=fp16 (use_fp16=true)");
  }
  if (precision != "fp16") {
    return make_error(ErrorCode::kInvalidArgument, "qnn: unknown precision '{}' (valid: fp16, quantized)",
                      precision);
  }
  if (profile_level < 0 || profile_level > 3) {
    return make_error(ErrorCode::kOutOfRange,
                      "qnn: profile_level {} is outside 0..3 (0 off, 1 basic, 2 detailed, 3 optrace)",
                      profile_level);
  }
  if (online_prepare && use_multi_contexts) {
    return make_error(ErrorCode::kInvalidArgument,
                      "qnn: online_prepare cannot be combined with use_multi_contexts (multiple "
                      "contexts are made from prepared context binaries)");
  }
  if (online_prepare && is_from_context_binary) {
    return make_error(ErrorCode::kInvalidArgument,
                      "qnn: online_prepare cannot be combined with is_from_context_binary (a context "
                      "binary is already prepared)");
  }
  if (use_weight_sharing && htp_arch < 73) {
    return make_error(ErrorCode::kInvalidArgument,
                      "qnn: use_weight_sharing needs HTP v73 or newer; soc_model {} is v{}", soc_model,
                      htp_arch);
  }
  return ok_status();
}

Result<QnnCompileSpecBuilder> QnnCompileSpecBuilder::from_options(
    const exporter::OptionMap& compile_spec_options) {
  QnnCompileOptions o;
  // Only the compile-spec options of the QNN table may arrive here.
  static const std::set<std::string> kKnown = {
      "soc_model",      "backend",          "htp_performance_mode", "precision",
      kUseFp16,         "shared_buffer",    "online_prepare",       "use_multi_contexts",
      "use_weight_sharing", "use_dlbc",     "use_slc_allocator",    "profile_level",
      "debug",          "saver",            "dump_intermediate_outputs", "is_from_context_binary",
      "use_mha2sha",    "embed_parameters"};
  for (const auto& [name, _] : compile_spec_options) {
    if (!kKnown.count(name)) {
      return make_error(ErrorCode::kInvalidArgument, "qnn compile spec: unknown option '{}'", name);
    }
  }
  KESTREL_ASSIGN_OR_RETURN(o.soc_model, get_option<std::string>(compile_spec_options, "soc_model"));
  KESTREL_ASSIGN_OR_RETURN(o.backend, get_option<std::string>(compile_spec_options, "backend"));
  KESTREL_ASSIGN_OR_RETURN(o.htp_performance_mode,
                           get_option<std::string>(compile_spec_options, "htp_performance_mode"));
  KESTREL_ASSIGN_OR_RETURN(std::string precision, get_option<std::string>(compile_spec_options, "precision"));
  KESTREL_ASSIGN_OR_RETURN(bool use_fp16, get_option<bool>(compile_spec_options, kUseFp16));
  if (precision == "auto") {
    o.precision = use_fp16 ? "fp16" : "quantized";
  } else if (precision == "fp16" && !use_fp16) {
    return make_error(ErrorCode::kInvalidArgument,
                      "qnn: precision=fp16 contradicts use_fp16=false (set one of them)");
  } else {
    o.precision = precision;  // an explicit precision wins over use_fp16's default
  }
  struct BoolField {
    const char* name;
    bool QnnCompileOptions::*field;
  };
  static constexpr BoolField kBools[] = {
      {"shared_buffer", &QnnCompileOptions::shared_buffer},
      {"online_prepare", &QnnCompileOptions::online_prepare},
      {"use_multi_contexts", &QnnCompileOptions::use_multi_contexts},
      {"use_weight_sharing", &QnnCompileOptions::use_weight_sharing},
      {"use_dlbc", &QnnCompileOptions::use_dlbc},
      {"use_slc_allocator", &QnnCompileOptions::use_slc_allocator},
      {"debug", &QnnCompileOptions::debug},
      {"saver", &QnnCompileOptions::saver},
      {"dump_intermediate_outputs", &QnnCompileOptions::dump_intermediate_outputs},
      {"is_from_context_binary", &QnnCompileOptions::is_from_context_binary},
      {"use_mha2sha", &QnnCompileOptions::use_mha2sha},
      {"embed_parameters", &QnnCompileOptions::embed_parameters},
  };
  for (const auto& b : kBools) {
    KESTREL_ASSIGN_OR_RETURN(o.*(b.field), get_option<bool>(compile_spec_options, b.name));
  }
  KESTREL_ASSIGN_OR_RETURN(o.profile_level, get_option<int64_t>(compile_spec_options, "profile_level"));
  KESTREL_RETURN_IF_ERROR(o.validate());
  return QnnCompileSpecBuilder(std::move(o));
}

QnnCompileSpecBuilder& QnnCompileSpecBuilder::soc_model(std::string v) { options_.soc_model = std::move(v); return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::backend(std::string v) { options_.backend = std::move(v); return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::htp_performance_mode(std::string v) { options_.htp_performance_mode = std::move(v); return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::precision(std::string v) { options_.precision = std::move(v); return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::shared_buffer(bool v) { options_.shared_buffer = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::online_prepare(bool v) { options_.online_prepare = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::use_multi_contexts(bool v) { options_.use_multi_contexts = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::use_weight_sharing(bool v) { options_.use_weight_sharing = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::use_dlbc(bool v) { options_.use_dlbc = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::use_slc_allocator(bool v) { options_.use_slc_allocator = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::profile_level(int64_t v) { options_.profile_level = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::debug(bool v) { options_.debug = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::saver(bool v) { options_.saver = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::dump_intermediate_outputs(bool v) { options_.dump_intermediate_outputs = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::is_from_context_binary(bool v) { options_.is_from_context_binary = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::use_mha2sha(bool v) { options_.use_mha2sha = v; return *this; }
QnnCompileSpecBuilder& QnnCompileSpecBuilder::embed_parameters(bool v) { options_.embed_parameters = v; return *this; }

Result<CompileSpecMap> QnnCompileSpecBuilder::build() const {
  QnnCompileOptions o = options_;
  KESTREL_RETURN_IF_ERROR(o.validate());
  CompileSpecMap specs;
  auto put = [&](const std::string& key, const std::string& text) { specs[key] = text_bytes(text); };
  put("spec_version", std::to_string(kQnnCompileSpecVersion));
  put("soc_model", o.soc_model);
  put("htp_arch", fmt::format("v{}", o.htp_arch));
  put("vtcm_mb", std::to_string(o.vtcm_mb));
  put("backend", o.backend);
  put("htp_performance_mode", o.htp_performance_mode);
  put("precision", o.precision);
  put("shared_buffer", bool_text(o.shared_buffer));
  put("online_prepare", bool_text(o.online_prepare));
  put("use_multi_contexts", bool_text(o.use_multi_contexts));
  put("use_weight_sharing", bool_text(o.use_weight_sharing));
  put("use_dlbc", bool_text(o.use_dlbc));
  put("use_slc_allocator", bool_text(o.use_slc_allocator));
  put("profile_level", std::to_string(o.profile_level));
  put("debug", bool_text(o.debug));
  put("saver", bool_text(o.saver));
  put("dump_intermediate_outputs", bool_text(o.dump_intermediate_outputs));
  put("is_from_context_binary", bool_text(o.is_from_context_binary));
  put("use_mha2sha", bool_text(o.use_mha2sha));
  put("embed_parameters", bool_text(o.embed_parameters));
  return specs;
}

std::string compile_spec_text(const CompileSpecMap& specs, const std::string& key) {
  auto it = specs.find(key);
  if (it == specs.end()) return {};
  return std::string(it->second.begin(), it->second.end());
}

Result<QnnCompileOptions> parse_qnn_compile_specs(const CompileSpecMap& specs) {
  std::set<std::string> seen;
  auto text = [&](const std::string& key) -> Result<std::string> {
    auto it = specs.find(key);
    if (it == specs.end()) {
      return make_error(ErrorCode::kCorrupt, "qnn compile specs: key '{}' is missing", key);
    }
    seen.insert(key);
    return std::string(it->second.begin(), it->second.end());
  };
  auto boolean = [&](const std::string& key) -> Result<bool> {
    KESTREL_ASSIGN_OR_RETURN(std::string value, text(key));
    if (value == "true") return true;
    if (value == "false") return false;
    return make_error(ErrorCode::kCorrupt, "qnn compile specs: '{}' is '{}', expected true or false",
                      key, value);
  };
  auto integer = [&](const std::string& key) -> Result<int64_t> {
    KESTREL_ASSIGN_OR_RETURN(std::string value, text(key));
    int64_t parsed = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
    if (ec != std::errc() || end != value.data() + value.size() || value.empty()) {
      return make_error(ErrorCode::kCorrupt, "qnn compile specs: '{}' is '{}', expected an integer",
                        key, value);
    }
    return parsed;
  };

  KESTREL_ASSIGN_OR_RETURN(int64_t version, integer("spec_version"));
  if (version != kQnnCompileSpecVersion) {
    return make_error(ErrorCode::kUnsupported,
                      "qnn compile specs: spec_version {} is not supported (this build reads {})",
                      version, kQnnCompileSpecVersion);
  }
  QnnCompileOptions o;
  KESTREL_ASSIGN_OR_RETURN(o.soc_model, text("soc_model"));
  KESTREL_ASSIGN_OR_RETURN(std::string arch, text("htp_arch"));
  KESTREL_ASSIGN_OR_RETURN(int64_t vtcm, integer("vtcm_mb"));
  KESTREL_ASSIGN_OR_RETURN(o.backend, text("backend"));
  KESTREL_ASSIGN_OR_RETURN(o.htp_performance_mode, text("htp_performance_mode"));
  KESTREL_ASSIGN_OR_RETURN(o.precision, text("precision"));
  KESTREL_ASSIGN_OR_RETURN(o.shared_buffer, boolean("shared_buffer"));
  KESTREL_ASSIGN_OR_RETURN(o.online_prepare, boolean("online_prepare"));
  KESTREL_ASSIGN_OR_RETURN(o.use_multi_contexts, boolean("use_multi_contexts"));
  KESTREL_ASSIGN_OR_RETURN(o.use_weight_sharing, boolean("use_weight_sharing"));
  KESTREL_ASSIGN_OR_RETURN(o.use_dlbc, boolean("use_dlbc"));
  KESTREL_ASSIGN_OR_RETURN(o.use_slc_allocator, boolean("use_slc_allocator"));
  KESTREL_ASSIGN_OR_RETURN(o.profile_level, integer("profile_level"));
  KESTREL_ASSIGN_OR_RETURN(o.debug, boolean("debug"));
  KESTREL_ASSIGN_OR_RETURN(o.saver, boolean("saver"));
  KESTREL_ASSIGN_OR_RETURN(o.dump_intermediate_outputs, boolean("dump_intermediate_outputs"));
  KESTREL_ASSIGN_OR_RETURN(o.is_from_context_binary, boolean("is_from_context_binary"));
  KESTREL_ASSIGN_OR_RETURN(o.use_mha2sha, boolean("use_mha2sha"));
  KESTREL_ASSIGN_OR_RETURN(o.embed_parameters, boolean("embed_parameters"));
  for (const auto& [key, _] : specs) {
    if (!seen.count(key)) {
      return make_error(ErrorCode::kCorrupt, "qnn compile specs: unknown key '{}'", key);
    }
  }
  KESTREL_RETURN_IF_ERROR(o.validate());
  if (arch != fmt::format("v{}", o.htp_arch) || vtcm != o.vtcm_mb) {
    return make_error(ErrorCode::kCorrupt,
                      "qnn compile specs: htp_arch {} / vtcm_mb {} do not match soc_model {} (v{}, {} MiB)",
                      arch, vtcm, o.soc_model, o.htp_arch, o.vtcm_mb);
  }
  return o;
}

}  // namespace kestrel::qnn
