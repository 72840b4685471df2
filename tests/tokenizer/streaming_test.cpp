// StreamingDecoder: multi-byte characters split across tokens are held back until complete, and
// the streamed text always equals decode() of the same ids.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/tokenizer/tokenizer.h"

namespace kestrel::tokenizer {
namespace {

using Ids = std::vector<int64_t>;

// A byte-level tokenizer with no merges: token id = byte value.
std::unique_ptr<Tokenizer> bytes_tokenizer() {
  const std::string json = fixtures::build_byte_level_bpe_tokenizer_json("", 256, {});
  auto t = load_hf_tokenizer(std::string_view(json));
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

Ids byte_ids(std::string_view bytes) {
  Ids ids;
  for (char c : bytes) ids.push_back(static_cast<uint8_t>(c));
  return ids;
}

std::string stream(const Tokenizer& t, const Ids& ids, std::vector<std::string>* parts = nullptr) {
  StreamingDecoder d(t);
  std::string out;
  for (int64_t id : ids) {
    std::string part = d.push(id);
    if (parts) parts->push_back(part);
    out += part;
  }
  std::string tail = d.flush();
  if (parts) parts->push_back(tail);
  return out + tail;
}

TEST(StreamingDecoder, HoldsSplitCharacterUntilComplete) {
  auto t = bytes_tokenizer();
  ASSERT_TRUE(t);
  ASSERT_EQ(*t->encode("\xF0\x9F\x98\x80", false), byte_ids("\xF0\x9F\x98\x80"));  // 😀: 4 byte tokens
  StreamingDecoder d(*t);
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.push(0x98), "");
  EXPECT_EQ(d.push(0x80), "\xF0\x9F\x98\x80");
  EXPECT_EQ(d.push(0xC3), "");
  EXPECT_EQ(d.push(0xA9), "\xC3\xA9");
  EXPECT_EQ(d.flush(), "");
  EXPECT_TRUE(d.status().ok());
}

TEST(StreamingDecoder, ConcatenationEqualsDecode) {
  auto t = bytes_tokenizer();
  ASSERT_TRUE(t);
  for (const std::string text : {"plain ascii", "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x8E\x89 end",
                                 "\xE2\x82\xAC\xE2\x82\xAC", "\n\n  spaced  \n"}) {
    const Ids ids = *t->encode(text, false);
    std::vector<std::string> parts;
    EXPECT_EQ(stream(*t, ids, &parts), *t->decode(ids));
    EXPECT_EQ(stream(*t, ids), text);
    for (const std::string& part : parts) {
      // Every part is complete UTF-8 on its own: re-decoding it changes nothing.
      EXPECT_EQ(*t->decode(byte_ids(part)), part);
    }
  }
}

TEST(StreamingDecoder, InvalidAndTruncatedBytes) {
  auto t = bytes_tokenizer();
  ASSERT_TRUE(t);
  const std::string fffd = "\xEF\xBF\xBD";
  {
    StreamingDecoder d(*t);
    EXPECT_EQ(d.push(0xF0), "");
    EXPECT_EQ(d.flush(), fffd);  // incomplete at the end
  }
  {
    StreamingDecoder d(*t);
    EXPECT_EQ(d.push(0xC3), "");
    EXPECT_EQ(d.push('a'), fffd + "a");  // known invalid as soon as 'a' arrives
  }
  EXPECT_EQ(*t->decode(Ids{0xF0}), fffd);
  EXPECT_EQ(*t->decode(Ids{0xC3, 'a'}), fffd + "a");
  // Maximal subparts: E2 82 (truncated) then 41 -> one U+FFFD; a lone continuation -> one each.
  EXPECT_EQ(*t->decode(Ids{0xE2, 0x82, 'A', 0x80, 0x80}), fffd + "A" + fffd + fffd);
  EXPECT_EQ(*t->decode(Ids{0xED, 0xA0, 0x80}), fffd + fffd + fffd);  // surrogate: never valid
}

TEST(StreamingDecoder, RandomBytesMatchDecode) {
  auto t = bytes_tokenizer();
  ASSERT_TRUE(t);
  uint64_t x = 12345;
  const auto next = [&x] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  // Mostly valid UTF-8 with some damage, so both paths are exercised.
  const std::vector<std::string> alphabet = {"a", " ", "\xC3\xA9", "\xE4\xB8\xAD", "\xF0\x9F\x98\x80", "\x80",
                                             "\xC3", "\xE4\xB8", "\xFF"};
  for (int round = 0; round < 200; ++round) {
    std::string bytes;
    const int n = static_cast<int>(next() % 24);
    for (int i = 0; i < n; ++i) bytes += alphabet[next() % alphabet.size()];
    const Ids ids = byte_ids(bytes);
    EXPECT_EQ(stream(*t, ids), *t->decode(ids)) << "round " << round;
  }
}

TEST(StreamingDecoder, BadIdIsRecorded) {
  auto t = bytes_tokenizer();
  ASSERT_TRUE(t);
  StreamingDecoder d(*t);
  EXPECT_EQ(d.push('a'), "a");
  EXPECT_EQ(d.push(100000), "\xEF\xBF\xBD");
  ASSERT_FALSE(d.status().ok());
  EXPECT_EQ(d.status().error().code(), ErrorCode::kOutOfRange);
  EXPECT_EQ(d.push('b'), "b");
  d.reset();
  EXPECT_TRUE(d.status().ok());
}

}  // namespace
}  // namespace kestrel::tokenizer
