// The project's own byte-level BPE tokenizer builder, checked through the HF loader.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/tokenizer/tokenizer.h"
#include "tokenizer/regex.h"

namespace kestrel::tokenizer {
namespace {

const std::vector<std::string> kSpecials = {"<|begin_of_text|>", "<|end_of_text|>"};

std::unique_ptr<Tokenizer> load_json_text(const std::string& json) {
  auto t = load_hf_tokenizer(std::string_view(json));
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

TEST(TokenizerBuilder, DefaultCorpusIsAFewKilobytesOfAscii) {
  const std::string corpus = fixtures::default_corpus();
  EXPECT_GT(corpus.size(), 3000u);
  EXPECT_LT(corpus.size(), 20000u);
  for (char c : corpus) EXPECT_LT(static_cast<uint8_t>(c), 0x80);
  EXPECT_NE(corpus.find("bird"), std::string::npos);
}

TEST(TokenizerBuilder, JsonLoadsAndRoundTripsTheCorpus) {
  const std::string corpus = fixtures::default_corpus();
  const std::string json = fixtures::build_byte_level_bpe_tokenizer_json(corpus, 512, kSpecials);
  auto t = load_json_text(json);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 512);
  EXPECT_EQ(t->bos_id(), 510);
  EXPECT_EQ(t->eos_ids(), (std::vector<int64_t>{511}));
  EXPECT_TRUE(t->is_special(510));
  auto ids = t->encode(corpus, false);
  ASSERT_TRUE(ids.ok()) << ids.error().to_string();
  EXPECT_LT(ids->size(), corpus.size() / 2) << "the trained merges should compress the training text";
  EXPECT_EQ(*t->decode(*ids), corpus);
  // Common words of the corpus became single tokens.
  EXPECT_EQ(t->encode(" the", false)->size(), 1u);
  EXPECT_EQ(t->encode(" birds", false)->size(), 1u);
  // Specials in text, bos on request.
  auto with_specials = t->encode("<|begin_of_text|>The rain<|end_of_text|>", false);
  ASSERT_TRUE(with_specials.ok());
  EXPECT_EQ(with_specials->front(), 510);
  EXPECT_EQ(with_specials->back(), 511);
  EXPECT_EQ(t->encode("x", true)->front(), 510);
  // Text outside the corpus still round-trips through the byte tokens.
  const std::string other = "Zebra \xF0\x9F\xA6\x93 \xE4\xB8\xAD\xE6\x96\x87 42\n\n";
  EXPECT_EQ(*t->decode(*t->encode(other, false)), other);
}

TEST(TokenizerBuilder, JsonIsAValidHfTokenizerFile) {
  const std::string json = fixtures::build_byte_level_bpe_tokenizer_json(fixtures::default_corpus(), 400, kSpecials);
  const auto j = nlohmann::json::parse(json);
  EXPECT_EQ(j["model"]["type"], "BPE");
  EXPECT_EQ(j["pre_tokenizer"]["type"], "ByteLevel");
  EXPECT_EQ(j["pre_tokenizer"]["use_regex"], true);
  EXPECT_EQ(j["decoder"]["type"], "ByteLevel");
  EXPECT_EQ(j["model"]["vocab"].size() + j["added_tokens"].size(), 400u);
  EXPECT_EQ(j["model"]["vocab"]["\xC4\xA0"], 32);  // "Ġ" is the space byte
  EXPECT_EQ(j["added_tokens"][0]["content"], "<|begin_of_text|>");
  EXPECT_EQ(j["added_tokens"][0]["special"], true);
  EXPECT_EQ(j["post_processor"]["type"], "TemplateProcessing");
  // Each merge is two vocabulary tokens whose concatenation is the next new token.
  const auto& merges = j["model"]["merges"];
  ASSERT_FALSE(merges.empty());
  const std::string first = merges[0];
  const size_t space = first.find(' ');
  ASSERT_NE(space, std::string::npos);
  EXPECT_EQ(j["model"]["vocab"][first.substr(0, space) + first.substr(space + 1)], 256);
}

TEST(TokenizerBuilder, Deterministic) {
  const std::string corpus = fixtures::default_corpus();
  EXPECT_EQ(fixtures::build_byte_level_bpe_tokenizer_json(corpus, 384, kSpecials),
            fixtures::build_byte_level_bpe_tokenizer_json(corpus, 384, kSpecials));
}

TEST(TokenizerBuilder, SmallCorpusIsPaddedToTheExactSize) {
  const std::string json = fixtures::build_byte_level_bpe_tokenizer_json("aaaa bbbb", 300, kSpecials);
  auto t = load_json_text(json);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 300);
  EXPECT_EQ(t->token_id("<|begin_of_text|>"), 298);
  EXPECT_EQ(t->token_id("<|reserved_0|>").has_value(), true);
  EXPECT_EQ(*t->decode(*t->encode("aaaa bbbb", false)), "aaaa bbbb");
  EXPECT_LE(t->encode("aaaa bbbb", false)->size(), 2u);
  // Too small a size is raised to bytes + specials.
  auto tiny = load_json_text(fixtures::build_byte_level_bpe_tokenizer_json("abc", 10, kSpecials));
  ASSERT_TRUE(tiny);
  EXPECT_EQ(tiny->vocab_size(), 258);
}

TEST(TokenizerBuilder, PreSplitMatchesTheGpt2Regex) {
  auto re = detail::Regex::compile(detail::kGpt2Pattern);
  ASSERT_TRUE(re.ok());
  const std::vector<std::string> texts = {
      fixtures::default_corpus(),
      "Hello, how are  you?  \n\n  It's 2024 -- isn't it?! 3.14 x'd 'quoted'\t\ttabs \n",
      "   leading and trailing   ",
      "a\nb\r\nc  \t d",
  };
  for (const std::string& text : texts) {
    std::vector<std::string> expected;
    const auto matches = re->find_all(text);
    ASSERT_TRUE(matches.ok());
    for (const auto& [b, e] : *matches) expected.push_back(text.substr(b, e - b));
    EXPECT_EQ(fixtures::gpt2_pre_split(text), expected) << text.substr(0, 60);
  }
}

}  // namespace
}  // namespace kestrel::tokenizer
