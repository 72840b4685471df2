#include <fmt/format.h>

#include <string_view>

#include "kestrel/program/spec.h"

namespace kestrel::program {

Segment::Segment(std::vector<uint8_t> bytes) {
  if (!bytes.empty()) source_ = std::make_shared<const HeldBytes>(std::move(bytes));
}

const std::vector<uint8_t>* Segment::held() const {
  static const std::vector<uint8_t> kEmpty;
  if (!source_) return &kEmpty;
  const auto* held = dynamic_cast<const HeldBytes*>(source_.get());
  return held != nullptr ? &held->bytes() : nullptr;
}

bool operator==(const Segment& a, const Segment& b) {
  if (a.source_ == b.source_) return true;
  const auto* a_bytes = a.held();
  const auto* b_bytes = b.held();
  return a_bytes != nullptr && b_bytes != nullptr && *a_bytes == *b_bytes;
}

std::string segment_role(const ProgramSpec& spec, uint32_t index) {
  for (size_t d = 0; d < spec.delegates.size(); ++d)
    if (spec.delegates[d].payload_segment == index)
      return fmt::format("payload of delegate {} ('{}')", d, spec.delegates[d].backend_id);
  constexpr std::string_view kSuffix = "_segment";
  for (const auto& [key, value] : spec.metadata) {
    const auto* number = std::get_if<int64_t>(&value);
    if (number == nullptr || *number != static_cast<int64_t>(index) || key.size() <= kSuffix.size() ||
        key.compare(key.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0)
      continue;
    return key.substr(0, key.size() - kSuffix.size());
  }
  for (const auto& method : spec.methods)
    for (const auto& value : method.values)
      if (value.kind == ValueKind::kConstant && value.constant.segment == index) return "constants";
  return "unreferenced";
}

}  // namespace kestrel::program
