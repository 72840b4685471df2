#include "input_parts.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace kestrel::fuzz {

std::vector<std::string_view> split_input(const uint8_t* data, size_t size, size_t parts) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> out;
  while (out.size() + 1 < parts) {
    const size_t at = rest.find(kSeparator);
    if (at == std::string_view::npos) break;
    out.push_back(rest.substr(0, at));
    rest.remove_prefix(at + kSeparator.size());
  }
  out.push_back(rest);
  out.resize(parts);
  return out;
}

std::string join_parts(const std::vector<std::string>& parts) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i > 0) out += kSeparator;
    out += parts[i];
  }
  return out;
}

namespace {

// Removed with everything in it when the process exits.
struct ScratchDir {
  ScratchDir() {
    path = (std::filesystem::temp_directory_path() / "kestrel-fuzz-XXXXXX").string();
    if (::mkdtemp(path.data()) == nullptr) std::abort();
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  std::string path;
};

}  // namespace

const std::string& scratch_dir() {
  static const ScratchDir dir;
  return dir.path;
}

std::string write_scratch_file(const std::string& name, std::string_view bytes) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return path;
}

}  // namespace kestrel::fuzz
