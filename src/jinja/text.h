// Python's str operations that templates call, on UTF-8 text measured in code points
// (internal).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::jinja {

// str.replace(old, new, count); count < 0 replaces every occurrence.
std::string py_replace(std::string_view text, std::string_view old, std::string_view with, int64_t count);
// str.capitalize(): the first character upper case, the rest lower case.
std::string py_capitalize(std::string_view text);
// str.title(): each run of cased letters starts upper case, the rest lower case.
std::string py_title(std::string_view text);
// str.isupper() (upper) or str.islower(): every cased character in that case, and at least one.
bool py_is_cased(std::string_view text, bool upper);
// str.split / str.rsplit: on `separator`, or on runs of whitespace when it is absent;
// max_split < 0 splits everywhere. An empty separator is the caller's error to report.
std::vector<std::string> py_split(std::string_view text, std::optional<std::string_view> separator,
                                  int64_t max_split, bool from_right);
// str.splitlines(keepends).
std::vector<std::string> py_splitlines(std::string_view text, bool keep_ends);
// Code point index of the first (or last) occurrence of `needle` in text[start:end]
// (code point bounds, Python's slice rules), or -1.
int64_t py_find(std::string_view text, std::string_view needle, std::optional<int64_t> start,
                std::optional<int64_t> end, bool from_right);
// text[start:end] with Python's slice bounds, in code points.
std::string_view py_substring(std::string_view text, std::optional<int64_t> start, std::optional<int64_t> end);

}  // namespace kestrel::jinja
