// llama2.c tokenizer.bin built in the test; encodings worked out by hand against run.c's rules.

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/tokenizer/tokenizer.h"

namespace kestrel::tokenizer {
namespace {

using fixtures::Llama2cToken;
using Ids = std::vector<int64_t>;

// 0 <unk>, 1 <s>, 2 </s>, 3..258 <0xNN>, then 259 " ", 260 h, 261 e, 262 l, 263 o, 264 w,
// 265 r, 266 d, and merged pieces whose scores set the greedy order:
//   267 " h" -5, 268 ll -2, 269 " he" -3, 270 " hell" -4, 271 " hello" -4.5, 272 " w" -6,
//   273 or -7, 274 " wor" -8, 275 ld -9, 276 " world" -10, 277 he -1.
std::vector<Llama2cToken> base_vocab() {
  std::vector<Llama2cToken> v = {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    v.push_back({name, 0});
  }
  for (const char* c : {" ", "h", "e", "l", "o", "w", "r", "d"}) v.push_back({c, -100});
  return v;
}

std::vector<Llama2cToken> hello_vocab() {
  auto v = base_vocab();
  const std::vector<Llama2cToken> merged = {{" h", -5},    {"ll", -2},  {" he", -3},   {" hell", -4},
                                            {" hello", -4.5f}, {" w", -6}, {"or", -7},  {" wor", -8},
                                            {"ld", -9},    {" world", -10}, {"he", -1}};
  v.insert(v.end(), merged.begin(), merged.end());
  return v;
}

std::unique_ptr<Tokenizer> load_vocab(const std::vector<Llama2cToken>& vocab) {
  const std::vector<uint8_t> bin = fixtures::build_llama2c_tokenizer_bin(vocab);
  auto t = load_llama2c_tokenizer(bin, static_cast<int64_t>(vocab.size()));
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(Llama2cTokenizer, GreedyMergesByScore) {
  auto t = load_vocab(hello_vocab());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 278);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_ids(), (Ids{2}));
  // " hello world": he (-1) first, then ll, " he", " hell", " hello"; then " w", or, " wor",
  // ld, " world".
  auto ids = t->encode("hello world", false);
  ASSERT_TRUE(ids.ok()) << ids.error().to_string();
  EXPECT_EQ(*ids, (Ids{271, 276}));
  EXPECT_EQ(*t->encode("hello world", true), (Ids{1, 271, 276}));
  EXPECT_EQ(*t->encode("", true), (Ids{1}));
  EXPECT_EQ(*t->encode("", false), Ids{});
  EXPECT_EQ(t->token_id(" hello"), 271);
}

TEST(Llama2cTokenizer, ScoreOrderDecidesTheSplit) {
  for (const bool ab_wins : {true, false}) {
    auto v = base_vocab();
    v.push_back({"a", -100});
    v.push_back({"b", -100});
    v.push_back({"c", -100});
    v.push_back({"ab", ab_wins ? -1.0f : -2.0f});  // 270
    v.push_back({"bc", ab_wins ? -2.0f : -1.0f});  // 271
    auto t = load_vocab(v);
    ASSERT_TRUE(t);
    // Dummy prefix " " (259); " a" is not a piece.
    EXPECT_EQ(*t->encode("abc", false), ab_wins ? (Ids{259, 270, 269}) : (Ids{259, 267, 271}));
  }
}

TEST(Llama2cTokenizer, ByteFallbackAndDecode) {
  auto t = load_vocab(hello_vocab());
  ASSERT_TRUE(t);
  // é is not a piece: its bytes C3 A9 become ids 3 + byte.
  const Ids ids = *t->encode("h\xC3\xA9", false);
  EXPECT_EQ(ids, (Ids{267, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(*t->decode(ids), "h\xC3\xA9");
  // Decode strips the leading space after bos (and at the start of a text); bos/eos render as nothing.
  EXPECT_EQ(*t->decode(Ids{1, 271, 276, 2}), "hello world");
  EXPECT_EQ(*t->token_bytes(271), " hello");
  EXPECT_EQ(*t->piece_bytes(271, 1), "hello");
  EXPECT_EQ(*t->piece_bytes(271, 276), " hello");
  EXPECT_EQ(*t->token_bytes(3 + 0x41), "A");
}

TEST(Llama2cTokenizer, RoundTrip) {
  auto t = load_vocab(hello_vocab());
  ASSERT_TRUE(t);
  for (const std::string text :
       {"", "hello world", "  two leading spaces", "new\nlines\n\n", "emoji \xF0\x9F\x98\x80!",
        "\xE4\xB8\xAD\xE6\x96\x87", "Hello, World. 123", "trailing  "}) {
    for (bool bos : {false, true}) {
      auto ids = t->encode(text, bos);
      ASSERT_TRUE(ids.ok()) << ids.error().to_string();
      EXPECT_EQ(*t->decode(*ids), text) << text;
    }
  }
}

TEST(Llama2cTokenizer, StreamingAfterBos) {
  auto t = load_vocab(hello_vocab());
  ASSERT_TRUE(t);
  StreamingDecoder d(*t);
  std::string out;
  for (int64_t id : Ids{1, 271, 276, 3 + 0xC3, 3 + 0xA9}) out += d.push(id);
  out += d.flush();
  EXPECT_EQ(out, "hello world\xC3\xA9");
  EXPECT_EQ(out, *t->decode(Ids{1, 271, 276, 3 + 0xC3, 3 + 0xA9}));

  // Without context the first word loses its space, as at the start of a text; given the last
  // prompt token it keeps it.
  StreamingDecoder fresh(*t);
  EXPECT_EQ(fresh.push(271), "hello");
  StreamingDecoder continued(*t, /*prev_id=*/276);
  EXPECT_EQ(continued.push(271), " hello");
  continued.reset();
  EXPECT_EQ(continued.push(271), "hello");
}

TEST(Llama2cTokenizer, TruncatedOrBadFilesAreErrors) {
  const std::vector<uint8_t> bin = fixtures::build_llama2c_tokenizer_bin(hello_vocab());
  // Claiming more tokens than the file has names the first missing token.
  auto more = load_llama2c_tokenizer(bin, 279);
  ASSERT_FALSE(more.ok());
  EXPECT_EQ(more.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(more.error().message().find("holds 278 tokens, but the model's vocab_size is 279"), std::string::npos)
      << more.error().message();
  // So is a file with more tokens than the model has.
  auto fewer = load_llama2c_tokenizer(bin, 277);
  ASSERT_FALSE(fewer.ok());
  EXPECT_NE(fewer.error().message().find("holds 278 tokens"), std::string::npos) << fewer.error().message();
  // Cut inside the bytes of the last token.
  std::vector<uint8_t> cut(bin.begin(), bin.end() - 2);
  auto truncated = load_llama2c_tokenizer(cut, 278);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.error().message().find("token 277"), std::string::npos) << truncated.error().message();
  EXPECT_FALSE(load_llama2c_tokenizer(std::span<const uint8_t>(bin.data(), 2), 278).ok());
  EXPECT_FALSE(load_llama2c_tokenizer(bin, -1).ok());
  // vocab_size 0 reads every token of the file.
  auto all = load_llama2c_tokenizer(bin, 0);
  ASSERT_TRUE(all.ok()) << all.error().to_string();
  EXPECT_EQ((*all)->vocab_size(), 278);
  EXPECT_FALSE(load_llama2c_tokenizer(cut, 0).ok());

  auto t = load_vocab(hello_vocab());
  ASSERT_TRUE(t);
  auto bad = t->decode(Ids{271, 5000});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kOutOfRange);
  EXPECT_NE(bad.error().message().find("token id 5000"), std::string::npos) << bad.error().message();
}

TEST(Llama2cTokenizer, VocabBuiltFromCorpusRoundTrips) {
  const std::string corpus = fixtures::default_corpus();
  const auto vocab = fixtures::build_llama2c_vocab(corpus, 512);
  ASSERT_EQ(vocab.size(), 512u);
  EXPECT_EQ(vocab[1].piece, "\n<s>\n");
  EXPECT_EQ(vocab[3 + 0x41].piece, "<0x41>");
  auto t = load_vocab(vocab);
  ASSERT_TRUE(t);
  auto ids = t->encode(corpus, true);
  ASSERT_TRUE(ids.ok()) << ids.error().to_string();
  EXPECT_LT(ids->size(), corpus.size() / 2);
  EXPECT_EQ(*t->decode(*ids), corpus);
  EXPECT_EQ(fixtures::build_llama2c_vocab(corpus, 512).back().piece, vocab.back().piece);  // deterministic
}

TEST(Llama2cTokenizer, DamagedFilesFailCleanly) {
  const std::vector<uint8_t> good = fixtures::build_llama2c_tokenizer_bin(hello_vocab());
  uint64_t x = 7;
  const auto next = [&x] {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x >> 33;
  };
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> damaged = good;
    if (round % 3 == 0) damaged.resize(next() % good.size());
    for (int k = 0; k < 3 && !damaged.empty(); ++k) damaged[next() % damaged.size()] = static_cast<uint8_t>(next());
    for (int64_t vocab : {int64_t{0}, int64_t{278}, int64_t{1} << 21}) {
      auto t = load_llama2c_tokenizer(damaged, vocab);
      if (!t.ok()) continue;
      auto ids = (*t)->encode("hello world \xC3\xA9", true);
      if (ids.ok()) (void)(*t)->decode(*ids);
    }
  }
}

TEST(Llama2cTokenizer, FormatDetectionAndFileLoading) {
  const std::vector<uint8_t> bin = fixtures::build_llama2c_tokenizer_bin(hello_vocab());
  EXPECT_EQ(detect_tokenizer_format(bin), TokenizerFormat::kLlama2c);
  const std::string json = "  \n{\"model\": {}}";
  EXPECT_EQ(detect_tokenizer_format(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(json.data()), json.size())),
            TokenizerFormat::kHfJson);
  EXPECT_EQ(*parse_tokenizer_format("llama2c"), TokenizerFormat::kLlama2c);
  EXPECT_EQ(*parse_tokenizer_format("hf_json"), TokenizerFormat::kHfJson);
  EXPECT_STREQ(tokenizer_format_name(TokenizerFormat::kLlama2c), "llama2c");
  auto bad = parse_tokenizer_format("sentencepiece");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("llama2c"), std::string::npos);

  const std::string path = std::string(KESTREL_TEST_BINARY_DIR) + "/llama2c_format_test_tokenizer.bin";
  {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(bin.data(), 1, bin.size(), f);
    std::fclose(f);
  }
  auto loaded = load_tokenizer_file(path);
  ASSERT_TRUE(loaded.ok()) << loaded.error().to_string();
  EXPECT_EQ(*(*loaded)->encode("hello world", false), (Ids{271, 276}));
  std::remove(path.c_str());
  auto missing = load_tokenizer_file(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message().find(path), std::string::npos);
}

}  // namespace
}  // namespace kestrel::tokenizer
