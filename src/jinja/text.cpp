#include "jinja/text.h"

#include <algorithm>

#include "jinja/unicode.h"

namespace kestrel::jinja {

std::string py_replace(std::string_view text, std::string_view old, std::string_view with, int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `with` before every character and at the end.
    const auto offsets = code_point_offsets(text);
    int64_t done = 0;
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      out += text.substr(offsets[i], offsets[i + 1] - offsets[i]);
    }
    if (count < 0 || done < count) out += with;
    return out;
  }
  size_t pos = 0;
  for (int64_t done = 0; count < 0 || done < count; ++done) {
    const size_t found = text.find(old, pos);
    if (found == std::string_view::npos) break;
    out += text.substr(pos, found - pos);
    out += with;
    pos = found + old.size();
  }
  out += text.substr(pos);
  return out;
}

std::string py_capitalize(std::string_view text) {
  std::string out;
  bool first = true;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    append_utf8(first ? upper_code_point(cp) : lower_code_point(cp), out);
    first = false;
    pos += length;
  }
  return out;
}

std::string py_title(std::string_view text) {
  std::string out;
  bool previous_cased = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    const bool cased = is_cased_upper(cp) || is_cased_lower(cp);
    append_utf8(previous_cased ? lower_code_point(cp) : upper_code_point(cp), out);
    previous_cased = cased;
    pos += length;
  }
  return out;
}

bool py_is_cased(std::string_view text, bool upper) {
  bool any = false;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const uint32_t cp = decode_at(text, pos, &length);
    pos += length;
    const bool is_upper = is_cased_upper(cp), is_lower = is_cased_lower(cp);
    if ((is_upper && !upper) || (is_lower && upper)) return false;
    any = any || is_upper || is_lower;
  }
  return any;
}

namespace {

// Whitespace-separated words of `text` as byte ranges.
std::vector<std::pair<size_t, size_t>> words(std::string_view text) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t start = std::string_view::npos;
  for (size_t pos = 0; pos < text.size();) {
    size_t length = 0;
    const bool space = is_python_space(decode_at(text, pos, &length));
    if (space && start != std::string_view::npos) {
      out.emplace_back(start, pos);
      start = std::string_view::npos;
    } else if (!space && start == std::string_view::npos) {
      start = pos;
    }
    pos += length;
  }
  if (start != std::string_view::npos) out.emplace_back(start, text.size());
  return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view text, std::optional<std::string_view> separator,
                                  int64_t max_split, bool from_right) {
  std::vector<std::string> parts;
  if (!separator) {
    const auto spans = words(text);
    const size_t n = spans.size();
    const size_t splits = max_split < 0 ? n : std::min(n, static_cast<size_t>(max_split) + 1);
    if (splits == 0) return parts;
    if (!from_right) {
      for (size_t i = 0; i + 1 < splits; ++i)
        parts.emplace_back(text.substr(spans[i].first, spans[i].second - spans[i].first));
      // The remainder keeps its inner and trailing whitespace.
      parts.emplace_back(strip(text.substr(spans[splits - 1].first), "", true, false, n == splits));
    } else {
      const size_t first_whole = n - splits + 1;
      parts.emplace_back(strip(text.substr(0, spans[first_whole - 1].second), "", true, first_whole == 1, false));
      for (size_t i = first_whole; i < n; ++i)
        parts.emplace_back(text.substr(spans[i].first, spans[i].second - spans[i].first));
    }
    return parts;
  }
  const std::string_view sep = *separator;
  if (!from_right) {
    size_t pos = 0;
    for (int64_t done = 0; max_split < 0 || done < max_split; ++done) {
      const size_t found = text.find(sep, pos);
      if (found == std::string_view::npos) break;
      parts.emplace_back(text.substr(pos, found - pos));
      pos = found + sep.size();
    }
    parts.emplace_back(text.substr(pos));
    return parts;
  }
  size_t end = text.size();
  std::vector<std::string> reversed;
  for (int64_t done = 0; max_split < 0 || done < max_split; ++done) {
    if (end < sep.size()) break;
    const size_t found = text.rfind(sep, end - sep.size());
    if (found == std::string_view::npos) break;
    reversed.emplace_back(text.substr(found + sep.size(), end - found - sep.size()));
    end = found;
  }
  reversed.emplace_back(text.substr(0, end));
  return {reversed.rbegin(), reversed.rend()};
}

std::vector<std::string> py_splitlines(std::string_view text, bool keep_ends) {
  std::vector<std::string> lines;
  size_t start = 0;
  for (size_t pos = 0; pos < text.size();) {
    const size_t brk = line_break_length(text, pos);
    if (brk == 0) {
      size_t length = 0;
      decode_at(text, pos, &length);
      pos += length;
      continue;
    }
    lines.emplace_back(text.substr(start, (keep_ends ? pos + brk : pos) - start));
    pos += brk;
    start = pos;
  }
  if (start < text.size()) lines.emplace_back(text.substr(start));
  return lines;
}

namespace {

// Byte range of text[start:end] in code points, Python's slice bounds.
std::pair<size_t, size_t> byte_range(std::string_view text, std::optional<int64_t> start, std::optional<int64_t> end,
                                     const std::vector<size_t>& offsets) {
  const auto length = static_cast<int64_t>(offsets.size()) - 1;
  auto clamp = [&](std::optional<int64_t> index, int64_t fallback) {
    int64_t i = index.value_or(fallback);
    if (i < 0) i = std::max<int64_t>(i + length, 0);
    return std::min(i, length);
  };
  const int64_t first = clamp(start, 0);
  const int64_t last = std::max(clamp(end, length), first);
  return {offsets[static_cast<size_t>(first)], offsets[static_cast<size_t>(last)]};
}

}  // namespace

std::string_view py_substring(std::string_view text, std::optional<int64_t> start, std::optional<int64_t> end) {
  const auto offsets = code_point_offsets(text);
  const auto [first, last] = byte_range(text, start, end, offsets);
  return text.substr(first, last - first);
}

int64_t py_find(std::string_view text, std::string_view needle, std::optional<int64_t> start,
                std::optional<int64_t> end, bool from_right) {
  const auto offsets = code_point_offsets(text);
  const auto [first, last] = byte_range(text, start, end, offsets);
  const std::string_view window = text.substr(first, last - first);
  const size_t found = from_right ? window.rfind(needle) : window.find(needle);
  if (found == std::string_view::npos) return -1;
  return static_cast<int64_t>(std::lower_bound(offsets.begin(), offsets.end(), first + found) - offsets.begin());
}

}  // namespace kestrel::jinja
