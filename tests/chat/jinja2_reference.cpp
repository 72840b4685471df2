#include "chat/jinja2_reference.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kestrel::testing {

namespace fs = std::filesystem;

std::string corpus_dir() { return std::string(KESTREL_SOURCE_DIR) + "/tests/chat/corpus"; }

std::string read_text_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << "cannot read " << path;
  std::ostringstream text;
  text << file.rdbuf();
  return text.str();
}

std::vector<ReferenceResult> render_with_jinja2(const std::vector<TemplateCase>& cases) {
  static std::atomic<int> counter{0};
  const fs::path dir = fs::temp_directory_path() /
                       ("kestrel-jinja2-" + std::to_string(getpid()) + "-" + std::to_string(counter++));
  fs::create_directories(dir);
  const std::string in = (dir / "cases.json").string(), out = (dir / "results.json").string();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const TemplateCase& c : cases)
    list.push_back({{"template", c.source}, {"context", c.context}, {"now", kReferenceClock}});
  std::ofstream(in, std::ios::binary) << list.dump();
  const std::string script = std::string(KESTREL_SOURCE_DIR) + "/tests/chat/render_reference.py";
  const std::string command = std::string("'") + KESTREL_PYTHON3 + "' '" + script + "' '" + in + "' '" + out + "'";
  const int status = std::system(command.c_str());
  std::vector<ReferenceResult> results;
  if (status != 0) {
    ADD_FAILURE() << "the jinja2 reference renderer failed (" << command << ", status " << status
                  << "); it needs Debian's python3-jinja2";
  } else {
    const auto json = nlohmann::json::parse(read_text_file(out));
    for (const auto& r : json) {
      ReferenceResult result;
      if (r.contains("output")) {
        result.output = r["output"].get<std::string>();
      } else {
        result.error = r.value("error", "");
        result.kind = r.value("kind", "");
        if (r.contains("line") && r["line"].is_number_integer()) result.line = r["line"].get<int>();
      }
      results.push_back(std::move(result));
    }
    EXPECT_EQ(results.size(), cases.size());
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return results;
}

std::vector<TemplateCase> load_feature_cases() {
  const std::string text = read_text_file(corpus_dir() + "/features.txt");
  std::vector<TemplateCase> cases;
  std::vector<std::string> lines;
  bool crlf = false;
  auto finish = [&] {
    if (cases.empty()) return;
    std::string source;
    for (size_t i = 0; i < lines.size(); ++i) source += (i ? (crlf ? "\r\n" : "\n") : "") + lines[i];
    cases.back().source = source;
  };
  std::istringstream stream(text);
  std::string line;
  bool started = false;
  while (std::getline(stream, line)) {
    if (line.rfind("=== ", 0) == 0) {
      finish();
      cases.push_back({line.substr(4), "", nlohmann::ordered_json::object()});
      lines.clear();
      crlf = false;
      started = true;
    } else if (!started) {
      continue;
    } else if (lines.empty() && line.rfind("--- context ", 0) == 0) {
      cases.back().context = nlohmann::ordered_json::parse(line.substr(12));
    } else if (lines.empty() && line == "--- crlf") {
      crlf = true;
    } else {
      lines.push_back(line);
    }
  }
  finish();
  return cases;
}

std::vector<std::string> corpus_template_files() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(corpus_dir() + "/templates"))
    if (entry.path().extension() == ".jinja") names.push_back(entry.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<TemplateCase> load_conversation_cases(const std::string& template_file) {
  const std::string source = read_text_file(corpus_dir() + "/templates/" + template_file);
  const auto conversations = nlohmann::ordered_json::parse(read_text_file(corpus_dir() + "/conversations.json"));
  std::vector<TemplateCase> cases;
  for (const auto& conversation : conversations) {
    for (const bool generation_prompt : {true, false}) {
      nlohmann::ordered_json context = {{"messages", conversation["messages"]},
                                        {"tools", conversation.value("tools", nlohmann::ordered_json())},
                                        {"documents", nullptr},
                                        {"add_generation_prompt", generation_prompt},
                                        {"bos_token", "<s>"},
                                        {"eos_token", "</s>"}};
      if (conversation.contains("kwargs"))
        for (const auto& [key, value] : conversation["kwargs"].items()) context[key] = value;
      cases.push_back({template_file + ":" + conversation["name"].get<std::string>() +
                           (generation_prompt ? "+generation_prompt" : ""),
                       source, std::move(context)});
    }
  }
  return cases;
}

}  // namespace kestrel::testing
