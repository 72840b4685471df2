#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kestrel/core/file.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

fs::path scratch(const std::string& name) {
  fs::path dir = fs::path(KESTREL_TEST_BINARY_DIR) / "core_file_test";
  fs::create_directories(dir);
  return dir / name;
}

TEST(ReadFile, ReadsARegularFileWhole) {
  const fs::path path = scratch("hello.txt");
  std::ofstream(path, std::ios::binary) << std::string("hello\0world", 11);
  auto text = read_file_text(path.string(), 11, "test file");
  ASSERT_TRUE(text.ok()) << text.error().to_string();
  EXPECT_EQ(*text, std::string("hello\0world", 11));
  auto bytes = read_file_bytes(path.string(), 100, "test file");
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 11u);
}

TEST(ReadFile, RefusesAFileLargerThanTheLimit) {
  const fs::path path = scratch("big.txt");
  std::ofstream(path, std::ios::binary) << std::string(100, 'x');
  auto text = read_file_text(path.string(), 99, "prompt file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code(), ErrorCode::kCapacity);
  EXPECT_NE(text.error().message().find("prompt file"), std::string::npos);
  EXPECT_NE(text.error().message().find("limit of 99 bytes"), std::string::npos);
}

TEST(ReadFile, ADirectoryIsAClearError) {
  const fs::path dir = scratch("a_directory");
  fs::create_directories(dir);
  auto text = read_file_text(dir.string(), 1 << 20, "options file");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(text.error().message().find("is a directory"), std::string::npos) << text.error().message();
}

TEST(ReadFile, AnEndlessDeviceStopsAtTheLimit) {
  auto bytes = read_file_bytes("/dev/zero", 1 << 20, "prompt file");
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.error().code(), ErrorCode::kCapacity);
  EXPECT_NE(bytes.error().message().find("/dev/zero"), std::string::npos);
}

TEST(ReadFile, AMissingFileIsNotFound) {
  auto text = read_file_text(scratch("absent.txt").string(), 10, "tokenizer");
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(text.error().message().find("absent.txt"), std::string::npos);
}

TEST(ReadFile, AnEmptyCharacterDeviceReadsAsEmpty) {
  auto text = read_file_text("/dev/null", 10, "prompt file");
  ASSERT_TRUE(text.ok());
  EXPECT_TRUE(text->empty());
}

}  // namespace
}  // namespace kestrel
