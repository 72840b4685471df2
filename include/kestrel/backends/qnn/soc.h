// Qualcomm SoCs the QNN HTP backend knows: SoC model name -> Hexagon tensor processor
// architecture and VTCM size. An SoC outside this table is an error at export time.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::qnn {

struct QnnSocInfo {
  std::string_view name;  // "SM8650"
  int htp_arch = 0;       // 75 for v75
  int vtcm_mb = 0;        // VTCM size in MiB
  std::string_view marketing_name;  // "Snapdragon 8 Gen 3" (informational, may be empty)
};

// Every known SoC, sorted by name.
std::span<const QnnSocInfo> qnn_soc_table();
// Null when the name is not in the table (names are matched exactly, upper case).
const QnnSocInfo* find_qnn_soc(std::string_view name);
std::vector<std::string> qnn_soc_names();

}  // namespace kestrel::qnn
