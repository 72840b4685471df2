// Backend options as `kestrel export --backend qnn` reads them: --option assignments (one per
// line) and an options file (JSON), then the partitioner and compile specs built from them,
// and the compile specs read back as the runtime reads them. Input: assignments, separator,
// options JSON.
#include <cstdint>
#include <nlohmann/json.hpp>

#include "input_parts.h"
#include "kestrel/backends/qnn/compile_spec.h"
#include "kestrel/backends/qnn/qnn_partitioner.h"
#include "kestrel/export/partitioner.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kestrel;
  const auto parts = fuzz::split_input(data, size, 2);
  const exporter::OptionTable& table = qnn::qnn_option_table();
  std::vector<std::string> assignments;
  for (size_t begin = 0; begin <= parts[0].size();) {
    const size_t end = std::min(parts[0].find('\n', begin), parts[0].size());
    assignments.emplace_back(parts[0].substr(begin, end - begin));
    begin = end + 1;
  }
  auto cli = table.parse_cli(assignments);
  exporter::OptionMap options;
  const auto json = nlohmann::json::parse(parts[1], nullptr, /*allow_exceptions=*/false);
  if (!json.is_discarded() && json.is_object()) {
    auto from_file = table.parse_json(json);
    if (from_file.ok()) options = std::move(from_file).value();
  }
  if (cli.ok())
    for (auto& [name, value] : *cli) options[name] = std::move(value);
  for (const auto& [name, value] : options) (void)exporter::option_value_to_string(value);
  auto partitioner = exporter::Partitioner::from_options(qnn::make_qnn_backend_exporter(), options);
  if (!partitioner.ok()) return 0;
  // What the exporter writes, the runtime must read back.
  if (!qnn::parse_qnn_compile_specs(partitioner->compile_specs()).ok()) __builtin_trap();
  return 0;
}
