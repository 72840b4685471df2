// Python's view of text for the template engine: strings are sequences of code points, and
// whitespace and case follow str.isspace / str.upper / str.lower (internal).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kestrel::jinja {

// Byte offsets of each code point of `text` (plus text.size() at the end). A byte that does
// not start a well-formed UTF-8 sequence counts as one code point of its own, so any input
// splits without loss.
std::vector<size_t> code_point_offsets(std::string_view text);

// Number of code points (as code_point_offsets counts them).
size_t code_point_count(std::string_view text);

// The code point at text[pos] and its byte length (an invalid byte decodes as itself, length 1).
uint32_t decode_at(std::string_view text, size_t pos, size_t* length);

void append_utf8(uint32_t cp, std::string& out);

// Python's str.isspace() for one code point.
bool is_python_space(uint32_t cp);

// Simple (one-to-one) Unicode case mappings; ASCII is exact, other scripts use the C library's
// UTF-8 tables.
std::string to_upper(std::string_view text);
std::string to_lower(std::string_view text);
uint32_t upper_code_point(uint32_t cp);
uint32_t lower_code_point(uint32_t cp);
bool is_cased_upper(uint32_t cp);
bool is_cased_lower(uint32_t cp);
// str.isalpha / str.isdigit / str.isalnum for one code point (ASCII exact, others from the C
// library's tables).
bool is_alpha(uint32_t cp);
bool is_digit(uint32_t cp);
bool is_alnum(uint32_t cp);
// Python's str.splitlines() line boundaries (\n \r \v \f \x1c-\x1e \x85 U+2028 U+2029; \r\n is one).
// Returns the length of the boundary at text[pos], 0 if there is none.
size_t line_break_length(std::string_view text, size_t pos);

// Python's str.strip/lstrip/rstrip: with `chars` empty and `whitespace` true, strips
// is_python_space; otherwise strips any code point that occurs in `chars`.
std::string_view strip(std::string_view text, std::string_view chars, bool whitespace, bool left, bool right);

}  // namespace kestrel::jinja
