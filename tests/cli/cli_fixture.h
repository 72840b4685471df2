// Runs the real kestrel binary: a default model exported once per test suite into a scratch
// directory, and a helper that runs a command line and captures exit code, stdout and stderr.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace kestrel::testing {

struct Output {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

class Cli : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();

  static std::string path(const std::string& name) { return (dir_ / name).string(); }
  // stdin is `stdin_text`, or the file `stdin_path` when that is not empty (e.g. /dev/zero).
  static Output run(const std::vector<std::string>& args, const std::string& stdin_text = "",
                    const std::string& stdin_path = "");

  static std::filesystem::path dir_;
};

}  // namespace kestrel::testing
