#include "kestrel/api/export_inputs.h"

#include <sys/stat.h>

#include <array>
#include <filesystem>
#include <fstream>

#include "kestrel/core/error_helpers.h"

namespace kestrel::api {

namespace {

bool same_file(const struct stat& a, const struct stat& b) { return a.st_dev == b.st_dev && a.st_ino == b.st_ino; }

// An earlier export may be replaced: it starts with the program file's magic.
bool is_kestrel_program(const std::string& path) {
  std::array<char, 8> magic{};
  std::ifstream in(path, std::ios::binary);
  return in.read(magic.data(), magic.size()) && std::string_view(magic.data(), magic.size()) == std::string_view("KESTREL\0", 8);
}

}  // namespace

Status refuse_overwriting_inputs(const std::string& output, const std::vector<std::string>& inputs) {
  struct stat out {};
  if (::stat(output.c_str(), &out) != 0) return ok_status();  // nothing there yet
  for (const std::string& input : inputs) {
    struct stat in {};
    if (input.empty() || ::stat(input.c_str(), &in) != 0) continue;
    if (same_file(in, out))
      return make_error(ErrorCode::kInvalidArgument,
                        "refusing to write the program to '{}': that is '{}', which this export reads", output, input);
    if (!S_ISDIR(in.st_mode)) continue;
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(input, ec)) {
      struct stat file {};
      if (::stat(entry.path().c_str(), &file) != 0 || !same_file(file, out)) continue;
      if (S_ISREG(file.st_mode) && is_kestrel_program(output)) continue;
      return make_error(ErrorCode::kInvalidArgument,
                        "refusing to write the program to '{}': that is '{}', a file of the checkpoint directory "
                        "this export reads",
                        output, entry.path().string());
    }
  }
  return ok_status();
}

}  // namespace kestrel::api
