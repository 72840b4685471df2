#include "kestrel/backends/qnn/soc.h"

#include <algorithm>
#include <array>

namespace kestrel::qnn {

namespace {
// HTP architecture and VTCM size per SoC, after the SoC tables of ExecuTorch's Qualcomm
// backend (qc_schema.py) and the QNN SDK's supported-SoC list. Sorted by name. QCS6490 (the IoT
// sibling of QCM6490) is assumed to match QCM6490.
constexpr std::array<QnnSocInfo, 22> kSocs{{
    {"QCM6490", 68, 2, ""},
    {"QCS6490", 68, 2, ""},
    {"QCS9100", 73, 8, ""},
    {"SA8255", 73, 8, ""},
    {"SA8295", 68, 8, ""},
    {"SA8540", 68, 8, ""},
    {"SA8797", 81, 16, ""},
    {"SAR2230P", 81, 4, ""},
    {"SM8350", 68, 4, "Snapdragon 888"},
    {"SM8450", 69, 8, "Snapdragon 8 Gen 1"},
    {"SM8475", 69, 8, "Snapdragon 8+ Gen 1"},
    {"SM8550", 73, 8, "Snapdragon 8 Gen 2"},
    {"SM8650", 75, 8, "Snapdragon 8 Gen 3"},
    {"SM8750", 79, 8, "Snapdragon 8 Elite"},
    {"SM8845", 81, 8, ""},
    {"SM8850", 81, 8, ""},
    {"SSG2115P", 73, 2, ""},
    {"SSG2125P", 73, 2, ""},
    {"SW6100", 81, 4, ""},
    {"SXR1230P", 73, 2, ""},
    {"SXR2230P", 69, 8, ""},
    {"SXR2330P", 79, 8, ""},
}};
}  // namespace

std::span<const QnnSocInfo> qnn_soc_table() { return kSocs; }

const QnnSocInfo* find_qnn_soc(std::string_view name) {
  auto it = std::find_if(kSocs.begin(), kSocs.end(), [&](const QnnSocInfo& s) { return s.name == name; });
  return it == kSocs.end() ? nullptr : &*it;
}

std::vector<std::string> qnn_soc_names() {
  std::vector<std::string> names;
  for (const auto& soc : kSocs) names.emplace_back(soc.name);
  return names;
}

}  // namespace kestrel::qnn
