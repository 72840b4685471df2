#include "kestrel/program/describe.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <variant>

#include "program/format.h"

namespace kestrel::program {

std::string format::shape_text(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

namespace {

constexpr size_t kMaxListItems = 8;
constexpr size_t kMaxTextChars = 64;
constexpr size_t kMaxHexBytes = 32;
constexpr std::string_view kNodeListingPrefix = "nodes.";

bool is_printable(unsigned char c) { return c >= 0x20 && c < 0x7f; }

// Non-printable bytes as \xNN (program text is untrusted).
std::string escaped(std::string_view text) {
  std::string out;
  for (unsigned char c : text) out += is_printable(c) ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02x}", c);
  return out;
}

// A quoted, escaped, possibly shortened string.
std::string quoted(std::string_view text) {
  std::string out = "\"";
  for (size_t i = 0; i < std::min(text.size(), kMaxTextChars); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (is_printable(c)) {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("\\x{:02x}", c);
    }
  }
  out += '"';
  if (text.size() > kMaxTextChars) out += fmt::format("... ({} chars)", text.size());
  return out;
}

template <typename T, typename F>
std::string list_text(const std::vector<T>& items, F&& item_text) {
  std::string out = "[";
  for (size_t i = 0; i < std::min(items.size(), kMaxListItems); ++i) {
    if (i > 0) out += ", ";
    out += item_text(items[i]);
  }
  if (items.size() > kMaxListItems) out += fmt::format(", ... ({} items)", items.size());
  return out + "]";
}

std::string meta_text(const MetaValue& value) {
  struct Visitor {
    std::string operator()(int64_t v) const { return fmt::format("{}", v); }
    std::string operator()(double v) const { return fmt::format("{}", v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return quoted(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return list_text(v, [](int64_t x) { return fmt::format("{}", x); });
    }
    std::string operator()(const std::vector<std::string>& v) const {
      return list_text(v, [](const std::string& x) { return quoted(x); });
    }
  };
  return std::visit(Visitor{}, value);
}

std::string bytes_text(const std::vector<uint8_t>& bytes) {
  if (std::all_of(bytes.begin(), bytes.end(), is_printable))
    return quoted(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  std::string out = "hex";
  for (size_t i = 0; i < std::min(bytes.size(), kMaxHexBytes); ++i) out += fmt::format(" {:02x}", bytes[i]);
  if (bytes.size() > kMaxHexBytes) out += " ...";
  return out + fmt::format(" ({} bytes)", bytes.size());
}

using format::shape_text;

std::string plural(size_t n, const char* word) { return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s"); }

void describe_io(std::string& out, const char* title, const MethodSpec& method, const std::vector<int32_t>& list) {
  out += fmt::format("    {} ({}):\n", title, list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const int32_t index = list[i];
    if (index < 0 || static_cast<size_t>(index) >= method.values.size()) {
      out += fmt::format("      [{}] <invalid value {}>\n", i, index);
      continue;
    }
    const ValueSpec& value = method.values[index];
    out += fmt::format("      [{}] {}: {} {}\n", i, value.name, dtype_name(value.dtype), shape_text(value.shape));
  }
}

void describe_method(std::string& out, const ProgramSpec& spec, const MethodSpec& method) {
  out += fmt::format("  method '{}'\n", method.name);
  out += fmt::format("    arena bytes: {}\n", method.arena_bytes);
  size_t kinds[5] = {};
  for (const auto& value : method.values)
    if (static_cast<size_t>(value.kind) < 5) ++kinds[static_cast<size_t>(value.kind)];
  out += fmt::format("    values: {} ({} input, {} output, {} constant, {} intermediate, {} alias)\n",
                     method.values.size(), kinds[0], kinds[1], kinds[2], kinds[3], kinds[4]);
  describe_io(out, "inputs", method, method.inputs);
  describe_io(out, "outputs", method, method.outputs);
  std::map<std::string, size_t> kernels, backends;
  for (const auto& instruction : method.instructions) {
    if (const auto* call = std::get_if<KernelCall>(&instruction)) {
      ++kernels[call->op];
    } else {
      const auto& delegate_call = std::get<DelegateCall>(instruction);
      ++backends[delegate_call.delegate < spec.delegates.size() ? spec.delegates[delegate_call.delegate].backend_id
                                                               : "<invalid>"];
    }
  }
  size_t kernel_calls = 0, delegate_calls = 0;
  for (const auto& [op, n] : kernels) kernel_calls += n;
  for (const auto& [id, n] : backends) delegate_calls += n;
  out += fmt::format("    instructions: {} ({}, {})\n", method.instructions.size(), plural(kernel_calls, "kernel call"),
                     plural(delegate_calls, "delegate call"));
  for (const auto& [op, n] : kernels) out += fmt::format("      kernel {}: {}\n", op, n);
  for (const auto& [id, n] : backends) out += fmt::format("      delegate {}: {}\n", id, n);
}

// "id<TAB>op<TAB>output<TAB>placement" lines as a table.
void describe_nodes(std::string& out, const std::string& method, const std::vector<std::string>& lines) {
  out += fmt::format("nodes of method '{}' ({}; ids for skip_node_id_set):\n", method, lines.size());
  out += fmt::format("  {:>5}  {:<12} {:<28} {}\n", "id", "op", "output", "runs on");
  for (const std::string& line : lines) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (size_t tab = line.find('\t'); fields.size() < 3 && tab != std::string::npos; tab = line.find('\t', start)) {
      fields.push_back(line.substr(start, tab - start));
      start = tab + 1;
    }
    fields.push_back(line.substr(start));
    if (fields.size() != 4) {
      out += fmt::format("  {}\n", quoted(line));
      continue;
    }
    for (std::string& field : fields) field = escaped(field);
    out += fmt::format("  {:>5}  {:<12} {:<28} {}\n", fields[0], fields[1], fields[2], fields[3]);
  }
}

}  // namespace

std::string describe_program(const LoadedProgram& program) {
  const ProgramSpec& spec = program.spec();
  std::string out = "Kestrel program\n";
  out += fmt::format("  format version: {}\n", program.format_version());
  out += fmt::format("  program version: {}\n", spec.version);
  out += fmt::format("  file bytes: {}\n", program.file_bytes());

  // Node placements ("nodes.<method>", written by a partitioning export) get their own table.
  auto is_node_listing = [](const std::string& key, const MetaValue& value) {
    return key.rfind(kNodeListingPrefix, 0) == 0 && std::holds_alternative<std::vector<std::string>>(value);
  };
  size_t listings = 0;
  for (const auto& [key, value] : spec.metadata) listings += is_node_listing(key, value);
  out += fmt::format("metadata ({}):\n", spec.metadata.size() - listings);
  for (const auto& [key, value] : spec.metadata)
    if (!is_node_listing(key, value)) out += fmt::format("  {} = {}\n", key, meta_text(value));

  out += fmt::format("methods ({}):\n", spec.methods.size());
  for (const auto& method : spec.methods) describe_method(out, spec, method);

  // Constants may be shared between methods (or overlap): count each byte of a segment once.
  std::set<std::tuple<uint32_t, uint64_t, uint64_t>> constants;
  for (const auto& method : spec.methods)
    for (const auto& value : method.values)
      if (value.kind == ValueKind::kConstant)
        constants.emplace(value.constant.segment, value.constant.offset, value.constant.nbytes);
  uint64_t constant_bytes = 0;
  uint32_t segment = UINT32_MAX;
  uint64_t covered_end = 0;
  for (const auto& [seg, offset, nbytes] : constants) {  // sorted by segment, then offset
    if (seg != segment) {
      segment = seg;
      covered_end = 0;
    }
    const uint64_t end = offset + nbytes;
    if (end > covered_end) {
      constant_bytes += end - std::max(offset, covered_end);
      covered_end = end;
    }
  }
  out += fmt::format("constants: {}, {} bytes\n", plural(constants.size(), "tensor"), constant_bytes);
  uint64_t segment_bytes = 0;
  for (size_t i = 0; i < program.num_segments(); ++i) segment_bytes += program.segment(static_cast<uint32_t>(i)).size();
  out += fmt::format("segments: {}, {} bytes\n", program.num_segments(), segment_bytes);
  out += fmt::format("  checksums: xxh3-64, {}\n", program.checksums_verified() ? "verified at load" : "not verified");
  for (uint32_t i = 0; i < program.num_segments(); ++i)
    out += fmt::format("  [{}] {}: {} bytes, checksum {:016x}\n", i, segment_role(spec, i), program.segment(i).size(),
                       program.segment_checksum(i));

  for (const auto& [key, value] : spec.metadata)
    if (is_node_listing(key, value)) describe_nodes(out, key.substr(kNodeListingPrefix.size()), std::get<std::vector<std::string>>(value));

  out += fmt::format("delegates ({}):\n", spec.delegates.size());
  for (size_t d = 0; d < spec.delegates.size(); ++d) {
    const DelegateSpec& delegate = spec.delegates[d];
    const uint64_t payload =
        delegate.payload_segment < program.num_segments() ? program.segment(delegate.payload_segment).size() : 0;
    out += fmt::format("  [{}] backend '{}': payload segment {}, {} bytes\n", d, delegate.backend_id,
                       delegate.payload_segment, payload);
    out += fmt::format("    compile specs ({}):\n", delegate.compile_specs.size());
    for (const auto& [key, value] : delegate.compile_specs)
      out += fmt::format("      {} = {}\n", key, bytes_text(value));
  }
  return out;
}

}  // namespace kestrel::program
