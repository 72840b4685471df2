#include "cli/cli_fixture.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

namespace kestrel::testing {

namespace fs = std::filesystem;

fs::path Cli::dir_;

void Cli::SetUpTestSuite() {
  dir_ = fs::temp_directory_path() / ("kestrel-cli-" + std::to_string(getpid()));
  fs::create_directories(dir_);
  ASSERT_EQ(run({"create-model", path("model")}).exit_code, 0);
  auto exported = run({"export", path("model"), "-o", path("model.kst"), "--prefill-step", "8", "--max-context",
                       "128"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_NE(exported.err.find("architecture LlamaForCausalLM"), std::string::npos) << exported.err;
}

void Cli::TearDownTestSuite() { fs::remove_all(dir_); }

Output Cli::run(const std::vector<std::string>& args, const std::string& stdin_text, const std::string& stdin_path) {
  std::string command = KESTREL_CLI;
  for (const auto& arg : args) {
    std::string quoted = "'";
    for (char c : arg) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    command += " " + quoted + "'";
  }
  const std::string out_file = path("stdout.txt"), err_file = path("stderr.txt");
  std::string in_file = stdin_path;
  if (in_file.empty()) {
    in_file = path("stdin.txt");
    std::ofstream(in_file) << stdin_text;
  }
  command += " <" + in_file + " >" + out_file + " 2>" + err_file;
  Output output;
  const int status = std::system(command.c_str());
  output.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  auto slurp = [](const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  output.out = slurp(out_file);
  output.err = slurp(err_file);
  return output;
}

}  // namespace kestrel::testing
