#include "kestrel/backends/qnn/payload.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

#include "kestrel/core/error_helpers.h"

namespace kestrel::qnn {

namespace {

constexpr char kMagic[8] = {'K', 'Q', 'N', 'N', 'P', 'A', 'Y', '\0'};

using nlohmann::json;

size_t align_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

void put_u32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& out, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(std::span<const uint8_t> in, size_t at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(in[at + i]) << (8 * i);
  return v;
}
uint64_t get_u64(std::span<const uint8_t> in, size_t at) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(in[at + i]) << (8 * i);
  return v;
}

const char* input_kind_name(exporter::InputKind kind) {
  switch (kind) {
    case exporter::InputKind::kNone: return "none";
    case exporter::InputKind::kUser: return "user";
    case exporter::InputKind::kParameter: return "parameter";
    case exporter::InputKind::kBuffer: return "buffer";
    case exporter::InputKind::kConstant: return "constant";
  }
  return "none";
}

std::optional<exporter::InputKind> input_kind_from_name(const std::string& name) {
  for (auto k : {exporter::InputKind::kNone, exporter::InputKind::kUser, exporter::InputKind::kParameter,
                 exporter::InputKind::kBuffer, exporter::InputKind::kConstant}) {
    if (name == input_kind_name(k)) return k;
  }
  return std::nullopt;
}

std::optional<QnnValueKind> value_kind_from_name(const std::string& name) {
  for (auto k : {QnnValueKind::kInput, QnnValueKind::kParameter, QnnValueKind::kConstant,
                 QnnValueKind::kIntermediate, QnnValueKind::kOutput}) {
    if (name == qnn_value_kind_name(k)) return k;
  }
  return std::nullopt;
}

json attr_to_json(const program::AttrValue& value) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, int64_t>) return {{"type", "int"}, {"value", v}};
        if constexpr (std::is_same_v<T, double>) return {{"type", "float"}, {"value", v}};
        if constexpr (std::is_same_v<T, std::string>) return {{"type", "string"}, {"value", v}};
        if constexpr (std::is_same_v<T, std::vector<int64_t>>) return {{"type", "ints"}, {"value", v}};
        if constexpr (std::is_same_v<T, std::vector<double>>) return {{"type", "floats"}, {"value", v}};
      },
      value);
}

Result<program::AttrValue> attr_from_json(const std::string& name, const json& j) {
  if (!j.is_object() || !j.contains("type") || !j.contains("value") || !j["type"].is_string()) {
    return make_error(ErrorCode::kCorrupt, "qnn payload: attribute '{}' is malformed", name);
  }
  const std::string type = j["type"].get<std::string>();
  const json& v = j["value"];
  if (type == "int" && v.is_number_integer()) return program::AttrValue(v.get<int64_t>());
  if (type == "float" && v.is_number()) return program::AttrValue(v.get<double>());
  if (type == "string" && v.is_string()) return program::AttrValue(v.get<std::string>());
  if (type == "ints" && v.is_array()) {
    std::vector<int64_t> out;
    for (const auto& e : v) {
      if (!e.is_number_integer()) break;
      out.push_back(e.get<int64_t>());
    }
    if (out.size() == v.size()) return program::AttrValue(std::move(out));
  }
  if (type == "floats" && v.is_array()) {
    std::vector<double> out;
    for (const auto& e : v) {
      if (!e.is_number()) break;
      out.push_back(e.get<double>());
    }
    if (out.size() == v.size()) return program::AttrValue(std::move(out));
  }
  return make_error(ErrorCode::kCorrupt, "qnn payload: attribute '{}' has type '{}' with a mismatched value",
                    name, type);
}

Result<size_t> expected_bytes(DType dtype, const std::vector<int64_t>& shape) {
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  const int64_t last = shape.empty() ? 1 : shape.back();
  return dtype_storage_bytes(dtype, numel, last);
}

}  // namespace

const char* qnn_value_kind_name(QnnValueKind kind) {
  switch (kind) {
    case QnnValueKind::kInput: return "input";
    case QnnValueKind::kParameter: return "parameter";
    case QnnValueKind::kConstant: return "constant";
    case QnnValueKind::kIntermediate: return "intermediate";
    case QnnValueKind::kOutput: return "output";
  }
  return "intermediate";
}

const QnnPayloadValue* QnnPayload::find_value(int32_t id) const {
  auto it = std::lower_bound(values.begin(), values.end(), id,
                             [](const QnnPayloadValue& v, int32_t target) { return v.id < target; });
  return it != values.end() && it->id == id ? &*it : nullptr;
}

std::span<const uint8_t> QnnPayload::data_of(const QnnPayloadValue& value) const {
  if (!value.embedded) return {};
  return blob.subspan(value.data_offset, value.data_bytes);
}

Result<std::vector<uint8_t>> serialize_qnn_payload(
    const exporter::Graph& subgraph, const std::map<std::string, std::vector<uint8_t>>& compile_specs) {
  const auto num_values = static_cast<exporter::ValueId>(subgraph.values().size());
  auto check_id = [&](exporter::ValueId id, const std::string& where) -> Status {
    if (id < 0 || id >= num_values) {
      return make_error(ErrorCode::kInvalidArgument, "qnn preprocess: {} refers to value {}, which does not exist",
                        where, id);
    }
    return ok_status();
  };

  std::set<exporter::ValueId> used;
  std::map<exporter::ValueId, int32_t> input_index;
  std::map<exporter::ValueId, int32_t> output_index;
  for (size_t i = 0; i < subgraph.inputs().size(); ++i) {
    const auto id = subgraph.inputs()[i];
    KESTREL_RETURN_IF_ERROR(check_id(id, fmt::format("input {}", i)));
    input_index.emplace(id, static_cast<int32_t>(i));
    used.insert(id);
  }
  for (size_t i = 0; i < subgraph.outputs().size(); ++i) {
    const auto id = subgraph.outputs()[i];
    KESTREL_RETURN_IF_ERROR(check_id(id, fmt::format("output {}", i)));
    output_index.emplace(id, static_cast<int32_t>(i));
    used.insert(id);
  }
  json nodes = json::array();
  for (const auto& node : subgraph.nodes()) {
    json attrs = json::object();
    for (const auto& [name, value] : node.attrs) attrs[name] = attr_to_json(value);
    for (auto id : node.inputs) {
      KESTREL_RETURN_IF_ERROR(check_id(id, fmt::format("node {} ({})", node.id, node.op)));
      used.insert(id);
    }
    for (auto id : node.outputs) {
      KESTREL_RETURN_IF_ERROR(check_id(id, fmt::format("node {} ({})", node.id, node.op)));
      used.insert(id);
    }
    if (node.op == "delegate") {
      return make_error(ErrorCode::kInvalidArgument, "qnn preprocess: node {} is already a delegate", node.id);
    }
    nodes.push_back({{"id", node.id}, {"op", node.op}, {"inputs", node.inputs}, {"outputs", node.outputs},
                     {"attrs", std::move(attrs)}});
  }

  // Parameters and constants are embedded unless the compile specs ask for references.
  bool embed = true;
  if (auto it = compile_specs.find("embed_parameters"); it != compile_specs.end()) {
    embed = std::string(it->second.begin(), it->second.end()) != "false";
  }
  std::set<exporter::ValueId> produced;
  for (const auto& node : subgraph.nodes()) produced.insert(node.outputs.begin(), node.outputs.end());

  std::vector<uint8_t> blob;
  json values = json::array();
  for (auto id : used) {
    const exporter::Value& v = subgraph.value(id);
    QnnValueKind kind = QnnValueKind::kIntermediate;
    const bool is_input = input_index.count(id) != 0;
    const bool has_data = embed && v.data != nullptr &&
                          (v.input_kind == exporter::InputKind::kParameter ||
                           v.input_kind == exporter::InputKind::kConstant);
    if (v.input_kind == exporter::InputKind::kParameter) {
      kind = QnnValueKind::kParameter;
    } else if (v.input_kind == exporter::InputKind::kConstant) {
      kind = QnnValueKind::kConstant;
    } else if (is_input) {
      kind = QnnValueKind::kInput;
    } else if (output_index.count(id)) {
      kind = QnnValueKind::kOutput;
    }
    // A value without embedded bytes (a reference included) must be an input or produced.
    if (!is_input && !has_data && !produced.count(id)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "qnn preprocess: value {} ('{}') is used but is neither an input, embedded data, "
                        "nor produced in the partition",
                        id, v.name);
    }
    json jv = {{"id", id},
               {"name", v.name},
               {"dtype", std::string(dtype_name(v.dtype))},
               {"shape", v.shape},
               {"kind", qnn_value_kind_name(kind)},
               {"input_kind", input_kind_name(v.input_kind)},
               {"alias_of", v.alias_of},
               {"input_index", is_input ? input_index[id] : -1},
               {"output_index", output_index.count(id) ? output_index[id] : -1}};
    if (has_data) {
      KESTREL_ASSIGN_OR_RETURN(size_t want, expected_bytes(v.dtype, v.shape));
      if (v.data->size() != want) {
        return make_error(ErrorCode::kInvalidArgument,
                          "qnn preprocess: {} '{}' has {} bytes, but {} {} needs {}", qnn_value_kind_name(kind),
                          v.name, v.data->size(), dtype_name(v.dtype), fmt::join(v.shape, "x"), want);
      }
      KESTREL_ASSIGN_OR_RETURN(const std::vector<uint8_t> data, v.data->read_all());
      const size_t offset = align_up(blob.size(), kQnnPayloadAlignment);
      blob.resize(offset + want, 0);
      if (want) std::memcpy(blob.data() + offset, data.data(), want);
      jv["data"] = {{"offset", offset}, {"nbytes", want}};
    }
    values.push_back(std::move(jv));
  }

  json specs = json::object();
  for (const auto& [key, bytes] : compile_specs) specs[key] = std::string(bytes.begin(), bytes.end());
  const json header = {{"version", kQnnPayloadVersion},
                       {"compile_specs", std::move(specs)},
                       {"values", std::move(values)},
                       {"inputs", subgraph.inputs()},
                       {"outputs", subgraph.outputs()},
                       {"nodes", std::move(nodes)}};
  const std::string text = header.dump();
  const size_t blob_offset = align_up(kQnnPayloadFixedHeader + text.size(), kQnnPayloadAlignment);
  std::vector<uint8_t> out(blob_offset + blob.size(), 0);
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  put_u32(out, 8, kQnnPayloadVersion);
  put_u32(out, 12, 0);
  put_u64(out, 16, text.size());
  put_u64(out, 24, blob_offset);
  put_u64(out, 32, blob.size());
  std::memcpy(out.data() + kQnnPayloadFixedHeader, text.data(), text.size());
  if (!blob.empty()) std::memcpy(out.data() + blob_offset, blob.data(), blob.size());
  return out;
}

namespace {

Result<QnnPayload> parse_header(const json& h, std::span<const uint8_t> blob) {
  QnnPayload p;
  p.blob = blob;
  if (!h.is_object()) return make_error(ErrorCode::kCorrupt, "qnn payload: header is not a JSON object");
  for (const char* key : {"version", "compile_specs", "values", "inputs", "outputs", "nodes"}) {
    if (!h.contains(key)) return make_error(ErrorCode::kCorrupt, "qnn payload: header lacks '{}'", key);
  }
  p.version = h["version"].get<uint32_t>();
  if (p.version != kQnnPayloadVersion) {
    return make_error(ErrorCode::kUnsupported, "qnn payload: header version {} (this build reads {})",
                      p.version, kQnnPayloadVersion);
  }
  for (const auto& [key, value] : h["compile_specs"].items()) p.compile_specs[key] = value.get<std::string>();

  for (const auto& jv : h["values"]) {
    QnnPayloadValue v;
    v.id = jv.at("id").get<int32_t>();
    v.name = jv.at("name").get<std::string>();
    const std::string dtype = jv.at("dtype").get<std::string>();
    auto parsed = dtype_from_name(dtype);
    if (!parsed) return make_error(ErrorCode::kCorrupt, "qnn payload: value {} has unknown dtype '{}'", v.id, dtype);
    v.dtype = *parsed;
    v.shape = jv.at("shape").get<std::vector<int64_t>>();
    for (int64_t d : v.shape) {
      if (d < 0) return make_error(ErrorCode::kCorrupt, "qnn payload: value {} has a negative dim", v.id);
    }
    auto kind = value_kind_from_name(jv.at("kind").get<std::string>());
    auto input_kind = input_kind_from_name(jv.at("input_kind").get<std::string>());
    if (!kind || !input_kind) return make_error(ErrorCode::kCorrupt, "qnn payload: value {} has an unknown kind", v.id);
    v.kind = *kind;
    v.input_kind = *input_kind;
    v.alias_of = jv.at("alias_of").get<int32_t>();
    v.input_index = jv.at("input_index").get<int32_t>();
    v.output_index = jv.at("output_index").get<int32_t>();
    if (jv.contains("data")) {
      v.embedded = true;
      v.data_offset = jv["data"].at("offset").get<uint64_t>();
      v.data_bytes = jv["data"].at("nbytes").get<uint64_t>();
      if (v.data_offset > blob.size() || v.data_bytes > blob.size() - v.data_offset) {
        return make_error(ErrorCode::kOutOfRange,
                          "qnn payload: value {} ('{}') data [{}, +{}) lies outside the {}-byte blob", v.id,
                          v.name, v.data_offset, v.data_bytes, blob.size());
      }
      auto want = expected_bytes(v.dtype, v.shape);
      if (!want.ok() || *want != v.data_bytes) {
        return make_error(ErrorCode::kCorrupt, "qnn payload: value {} ('{}') has {} data bytes for {} {}", v.id,
                          v.name, v.data_bytes, dtype, fmt::join(v.shape, "x"));
      }
    }
    if (!p.values.empty() && p.values.back().id >= v.id) {
      return make_error(ErrorCode::kCorrupt, "qnn payload: value ids are not strictly increasing at {}", v.id);
    }
    p.values.push_back(std::move(v));
  }
  auto known = [&](int32_t id) { return p.find_value(id) != nullptr; };
  p.inputs = h["inputs"].get<std::vector<int32_t>>();
  p.outputs = h["outputs"].get<std::vector<int32_t>>();
  std::set<int32_t> available;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const QnnPayloadValue* v = p.find_value(p.inputs[i]);
    if (v == nullptr || v->input_index != static_cast<int32_t>(i)) {
      return make_error(ErrorCode::kCorrupt, "qnn payload: input {} (value {}) is inconsistent", i, p.inputs[i]);
    }
    available.insert(v->id);
  }
  for (const auto& v : p.values) {
    if (v.embedded) available.insert(v.id);
  }
  for (const auto& jn : h["nodes"]) {
    QnnPayloadNode n;
    n.id = jn.at("id").get<int32_t>();
    n.op = jn.at("op").get<std::string>();
    n.inputs = jn.at("inputs").get<std::vector<int32_t>>();
    n.outputs = jn.at("outputs").get<std::vector<int32_t>>();
    for (const auto& [name, value] : jn.at("attrs").items()) {
      KESTREL_ASSIGN_OR_RETURN(n.attrs[name], attr_from_json(name, value));
    }
    for (int32_t id : n.inputs) {
      if (!available.count(id)) {
        return make_error(ErrorCode::kCorrupt,
                          "qnn payload: node {} ({}) reads value {} before it is available", n.id, n.op, id);
      }
    }
    for (int32_t id : n.outputs) {
      if (!known(id)) return make_error(ErrorCode::kCorrupt, "qnn payload: node {} writes unknown value {}", n.id, id);
      available.insert(id);
    }
    p.nodes.push_back(std::move(n));
  }
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const QnnPayloadValue* v = p.find_value(p.outputs[i]);
    if (v == nullptr || !available.count(v->id) || v->output_index != static_cast<int32_t>(i)) {
      return make_error(ErrorCode::kCorrupt, "qnn payload: output {} (value {}) is inconsistent", i, p.outputs[i]);
    }
  }
  return p;
}

}  // namespace

Result<QnnPayload> parse_qnn_payload(std::span<const uint8_t> bytes) {
  if (bytes.size() < kQnnPayloadFixedHeader || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    return make_error(ErrorCode::kCorrupt, "qnn payload: bad magic or truncated ({} bytes)", bytes.size());
  }
  const uint32_t version = get_u32(bytes, 8);
  if (version != kQnnPayloadVersion) {
    return make_error(ErrorCode::kUnsupported, "qnn payload: format version {} (this build reads {})", version,
                      kQnnPayloadVersion);
  }
  const uint64_t header_len = get_u64(bytes, 16);
  const uint64_t blob_offset = get_u64(bytes, 24);
  const uint64_t blob_len = get_u64(bytes, 32);
  const uint64_t size = bytes.size();
  if (header_len > size - kQnnPayloadFixedHeader || blob_offset < kQnnPayloadFixedHeader + header_len ||
      blob_offset % kQnnPayloadAlignment != 0 || blob_offset > size || blob_len > size - blob_offset) {
    return make_error(ErrorCode::kOutOfRange,
                      "qnn payload: header ({} bytes) or blob ({} bytes at {}) lies outside the {}-byte payload",
                      header_len, blob_len, blob_offset, size);
  }
  const auto* text = reinterpret_cast<const char*>(bytes.data() + kQnnPayloadFixedHeader);
  json header = json::parse(text, text + header_len, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded()) return make_error(ErrorCode::kCorrupt, "qnn payload: header is not valid JSON");
  try {
    return parse_header(header, bytes.subspan(blob_offset, blob_len));
  } catch (const json::exception& e) {
    return make_error(ErrorCode::kCorrupt, "qnn payload: malformed header: {}", e.what());
  }
}

}  // namespace kestrel::qnn
