// The kestrel binary with chat programs: export, chat-template, run --messages, run --chat
// (and its fallback for programs without a template).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <fstream>
#include <iterator>

#include "chat/chat_fixture.h"
#include "llm/test_programs.h"

namespace kestrel::testing {
namespace {

using json = nlohmann::ordered_json;

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

// Runs the CLI with `args` (quoted for the shell) and `input` on stdin.
CliRun kestrel_cli(const TempDir& dir, const std::vector<std::string>& args, const std::string& input = "") {
  std::string command = KESTREL_CLI;
  for (const std::string& arg : args) command += " '" + arg + "'";
  std::ofstream(dir.file("in.txt")) << input;
  command += " <" + dir.file("in.txt") + " >" + dir.file("out.txt") + " 2>" + dir.file("err.txt");
  CliRun run;
  const int status = std::system(command.c_str());
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream out(dir.file("out.txt"), std::ios::binary), err(dir.file("err.txt"), std::ios::binary);
  run.out.assign(std::istreambuf_iterator<char>(out), {});
  run.err.assign(std::istreambuf_iterator<char>(err), {});
  return run;
}

class ChatCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    write_chat_checkpoint(dir_->file("chat"), {{"chat_template", kChatmlTemplate}});
    write_chat_checkpoint(dir_->file("plain"), json::object());
    for (const char* name : {"chat", "plain"}) {
      const CliRun exported = kestrel_cli(*dir_, {"export", dir_->file(name), "-o", dir_->file(std::string(name) + ".kst"),
                                               "--prefill-step", "4", "--max-context", "192", "--quiet"});
      ASSERT_EQ(exported.exit_code, 0) << exported.err;
    }
    std::ofstream(dir_->file("messages.json")) << R"([{"role": "user", "content": "Hi \"you\"\nthere"}])";
  }
  static void TearDownTestSuite() { delete dir_; }

  static TempDir* dir_;
};

TempDir* ChatCli::dir_ = nullptr;

TEST_F(ChatCli, ChatTemplatePrintsTheRenderedPromptExactly) {
  CliRun run = kestrel_cli(*dir_, {"chat-template", dir_->file("chat.kst"), "--messages", dir_->file("messages.json")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "<|im_start|>user\nHi \"you\"\nthere<|im_end|>\n<|im_start|>assistant\n");
  run = kestrel_cli(*dir_, {"chat-template", dir_->file("chat.kst"), "--messages", dir_->file("messages.json"),
                            "--no-generation-prompt"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.out, "<|im_start|>user\nHi \"you\"\nthere<|im_end|>\n");
}

TEST_F(ChatCli, ChatTemplateErrorsNameTheProblem) {
  CliRun run = kestrel_cli(*dir_, {"chat-template", dir_->file("plain.kst"), "--messages", dir_->file("messages.json")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("has no chat template"), std::string::npos) << run.err;
  std::ofstream(dir_->file("bad.json")) << R"({"not_messages": 1})";
  run = kestrel_cli(*dir_, {"chat-template", dir_->file("chat.kst"), "--messages", dir_->file("bad.json")});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("bad.json"), std::string::npos) << run.err;
}

TEST_F(ChatCli, RunMessagesAnswersOneConversation) {
  const CliRun run = kestrel_cli(*dir_, {"run", dir_->file("chat.kst"), "--messages", dir_->file("messages.json"), "-n",
                                      "5", "--temperature", "0", "--json"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto out = json::parse(run.out);
  EXPECT_EQ(out["prompt"], "<|im_start|>user\nHi \"you\"\nthere<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_FALSE(out["token_ids"].empty());
  EXPECT_NE(out["stop_reason"], "");
}

TEST_F(ChatCli, RunChatUsesTheTemplateAndReusesTheCache) {
  const CliRun run = kestrel_cli(*dir_, {"run", dir_->file("chat.kst"), "--chat", "--system", "Be brief.", "-n", "3",
                                      "--temperature", "0", "--stats"},
                              "Hello\nAgain\n");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err.find("no chat template"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find(", 0 reused from earlier turns"), std::string::npos) << run.err;  // first turn
  const size_t second = run.err.rfind(" reused from earlier turns");
  ASSERT_NE(second, std::string::npos);
  const size_t number = run.err.rfind(", ", second) + 2;
  EXPECT_GT(std::stoi(run.err.substr(number, second - number)), 0) << run.err;
}

TEST_F(ChatCli, RunChatWithoutTemplateSaysSoOnceAndContinuesRaw) {
  const CliRun run = kestrel_cli(*dir_, {"run", dir_->file("plain.kst"), "--chat", "-n", "2", "--temperature", "0"},
                              "one\ntwo\n");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const size_t first = run.err.find("has no chat template");
  ASSERT_NE(first, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find("has no chat template", first + 1), std::string::npos);
  EXPECT_NE(run.out.find("> "), std::string::npos);
  // --messages needs a template.
  const CliRun messages = kestrel_cli(*dir_, {"run", dir_->file("plain.kst"), "--messages", dir_->file("messages.json")});
  EXPECT_EQ(messages.exit_code, 1);
  EXPECT_NE(messages.err.find("no chat template"), std::string::npos) << messages.err;
}

}  // namespace
}  // namespace kestrel::testing
