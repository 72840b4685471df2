// Renders template test cases with jinja2 itself (tests/chat/render_reference.py, run by
// /usr/bin/python3 at test time), configured as Hugging Face transformers configures it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kestrel::testing {

inline constexpr int64_t kReferenceClock = 1721999000;  // strftime_now's fixed time in both renderers

struct TemplateCase {
  std::string name;
  std::string source;
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
};

struct ReferenceResult {
  std::optional<std::string> output;  // set when jinja2 rendered the case
  std::string error;                  // otherwise its message
  std::string kind;                   // "syntax", "raise" (raise_exception) or "other"
  int line = 0;                       // syntax errors: jinja2's line number (0 if unknown)
};

// One result per case, in order. Fails the current test (and returns nothing) when the
// reference renderer cannot run.
std::vector<ReferenceResult> render_with_jinja2(const std::vector<TemplateCase>& cases);

// The cases of tests/chat/corpus/features.txt.
std::vector<TemplateCase> load_feature_cases();
// Every conversation of tests/chat/corpus/conversations.json applied to `template_file`
// (under tests/chat/corpus/templates), with and without the generation prompt, in the
// context transformers builds (messages, tools, documents, add_generation_prompt,
// bos_token, eos_token and the conversation's extra keyword arguments).
std::vector<TemplateCase> load_conversation_cases(const std::string& template_file);
// The file names under tests/chat/corpus/templates, sorted.
std::vector<std::string> corpus_template_files();

std::string read_text_file(const std::string& path);
std::string corpus_dir();

}  // namespace kestrel::testing
