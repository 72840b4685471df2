// Unicode normalizers of tokenizer.json (NFC, NFD, NFKC, NFKD, Lowercase, Strip) against
// Python's unicodedata and str.lower, run at test time; and post-processors that would add
// tokens the tokenizer cannot add are refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kestrel/fixtures/tokenizer_builder.h"
#include "kestrel/tokenizer/tokenizer.h"

namespace kestrel::tokenizer {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Byte-level tokens only (no merges): decode(encode(text)) is exactly the normalized text.
json byte_tokenizer_with(json normalizer) {
  json j = json::parse(fixtures::build_byte_level_bpe_tokenizer_json("", 256, {}));
  j["normalizer"] = std::move(normalizer);
  return j;
}

Result<std::string> normalized(const json& normalizer, const std::string& text) {
  KESTREL_ASSIGN_OR_RETURN(auto tokenizer, load_hf_tokenizer(std::string_view(byte_tokenizer_with(normalizer).dump())));
  KESTREL_ASSIGN_OR_RETURN(auto ids, tokenizer->encode(text, false));
  return tokenizer->decode(ids);
}

const std::vector<std::string> kTexts = {
    "plain ASCII text",
    "\xEF\xAC\x81" "ne \xE2\x91\xA0 \xE2\x85\xAB \xC2\xBD",     // ligature fi, circled 1, roman 12, one half
    "\xE2\x84\xAB \xC3\x85 e\xCC\x81 caf\xC3\xA9",              // angstrom sign, A-ring, e + acute, café
    "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4",                     // Hangul syllables
    "\xE1\x84\x92\xE1\x85\xA1\xE1\x86\xAB",                     // Hangul jamo
    "\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 \xEF\xBD\xB6\xEF\xBE\x9E",  // fullwidth ABC, halfwidth ka + dakuten
    "\xCE\xA3\xCE\x91\xCE\xA3 \xC4\xB0stanbul \xE1\xBA\x9E \xC7\x84",  // ΣΑΣ İstanbul ẞ Ǆ
    "x\xC2\xB2 \xE3\x8D\xBF \xE2\x84\x83 \xEF\xB9\x90",         // superscript 2, square kabushiki, degree C, small comma
    "e\xCC\x81\xCC\xA7 o\xCC\x88\xCC\x84 \xE1\xB9\xA9",         // reordered combining marks
    "\xE3\x80\x80\xC2\xA0 spaced \xE2\x80\x83\t",               // ideographic space, no-break space, em space
    "\xF0\x9F\x98\x80 emoji \xF0\x9D\x90\x80",                   // emoji, mathematical bold A
};

json python_reference(const std::vector<std::string>& texts) {
  const fs::path dir = fs::temp_directory_path() / ("kestrel-unicode-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string in = (dir / "in.json").string(), out = (dir / "out.json").string();
  std::ofstream(in, std::ios::binary) << json(texts).dump();
  const std::string script = std::string(KESTREL_SOURCE_DIR) + "/tests/tokenizer/unicode_reference.py";
  const std::string command = std::string("'") + KESTREL_PYTHON3 + "' '" + script + "' '" + in + "' '" + out + "'";
  json result;
  if (std::system(command.c_str()) == 0) {
    std::ifstream file(out, std::ios::binary);
    std::stringstream text;
    text << file.rdbuf();
    result = json::parse(text.str());
  } else {
    ADD_FAILURE() << "the Python reference failed: " << command;
  }
  std::error_code ignored;
  fs::remove_all(dir, ignored);
  return result;
}

TEST(UnicodeNormalizers, MatchPythonUnicodedata) {
  const json reference = python_reference(kTexts);
  ASSERT_EQ(reference.size(), kTexts.size());
  for (const char* form : {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip"}) {
    for (size_t i = 0; i < kTexts.size(); ++i) {
      SCOPED_TRACE(std::string(form) + " of text " + std::to_string(i));
      auto got = normalized({{"type", form}}, kTexts[i]);
      ASSERT_TRUE(got.ok()) << got.error().to_string();
      EXPECT_EQ(*got, reference[i][form].get<std::string>());
    }
  }
}

TEST(UnicodeNormalizers, InsideASequenceAndOnDifferentText) {
  // NFKC then Lowercase, as many tokenizers chain them: "ＡＢＣ" -> "ABC" -> "abc".
  json sequence = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "NFKC"}}, {{"type", "Lowercase"}}})}};
  auto got = normalized(sequence, "\xEF\xBC\xA1\xEF\xBC\xA2\xEF\xBC\xA3 \xEF\xAC\x81");
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  EXPECT_EQ(*got, "abc fi");
}

TEST(UnicodeNormalizers, InvalidUtf8IsAnErrorNamingTheNormalizer) {
  for (const char* form : {"NFC", "NFKD", "Lowercase"}) {
    auto got = normalized({{"type", form}}, "ok \xC3 broken");
    ASSERT_FALSE(got.ok()) << form;
    EXPECT_EQ(got.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(got.error().message().find(form), std::string::npos) << got.error().message();
    EXPECT_NE(got.error().message().find("not valid UTF-8"), std::string::npos) << got.error().message();
  }
}

// The single-text template of a TemplateProcessing post-processor.
json template_processing(json single) {
  return {{"type", "TemplateProcessing"},
          {"single", std::move(single)},
          {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {256}}, {"tokens", {"<s>"}}}},
                              {"</s>", {{"id", "</s>"}, {"ids", {257}}, {"tokens", {"</s>"}}}}}}};
}

Result<std::unique_ptr<Tokenizer>> with_post_processor(json post_processor) {
  json j = json::parse(fixtures::build_byte_level_bpe_tokenizer_json("", 258, {"<s>", "</s>"}));
  j["post_processor"] = std::move(post_processor);
  return load_hf_tokenizer(std::string_view(j.dump()));
}

const json kBos = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
const json kEos = {{"SpecialToken", {{"id", "</s>"}, {"type_id", 0}}}};
const json kText = {{"Sequence", {{"id", "A"}, {"type_id", 0}}}};

TEST(PostProcessors, ALeadingSpecialTokenIsTheBos) {
  auto t = with_post_processor(template_processing(json::array({kBos, kText})));
  ASSERT_TRUE(t.ok()) << t.error().to_string();
  EXPECT_EQ((*t)->bos_id(), 256);
  EXPECT_EQ((*(*t)->encode("a", true)).front(), 256);
  EXPECT_TRUE(with_post_processor({{"type", "ByteLevel"}, {"trim_offsets", false}}).ok());
  EXPECT_TRUE(with_post_processor(
                  {{"type", "Sequence"},
                   {"processors", json::array({{{"type", "ByteLevel"}}, template_processing(json::array({kText}))})}})
                  .ok());
}

TEST(PostProcessors, ThoseThatAddOtherTokensAreRefused) {
  struct Case {
    json post_processor;
    std::string message;
  };
  const std::vector<Case> cases = {
      {template_processing(json::array({kBos, kText, kEos})), "adds special token '</s>' after the text"},
      {template_processing(json::array({kBos, kBos, kText})), "after another special token"},
      {{{"type", "RobertaProcessing"}, {"sep", {"</s>", 257}}, {"cls", {"<s>", 256}}}, "'RobertaProcessing' is not supported"},
      {{{"type", "BertProcessing"}}, "'BertProcessing' is not supported"},
      {{{"type", "Frobnicate"}}, "'Frobnicate' is not supported"},
      {{{"type", "Sequence"}, {"processors", json::array({{{"type", "Frobnicate"}}})}},
       "post_processor.processors[0].type 'Frobnicate'"},
  };
  for (const Case& c : cases) {
    auto t = with_post_processor(c.post_processor);
    ASSERT_FALSE(t.ok()) << c.post_processor.dump();
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported) << t.error().message();
    EXPECT_NE(t.error().message().find(c.message), std::string::npos) << t.error().message();
  }
  auto no_text = with_post_processor(template_processing(json::array({kBos})));
  ASSERT_FALSE(no_text.ok());
  EXPECT_NE(no_text.error().message().find("no text sequence"), std::string::npos) << no_text.error().message();
}

}  // namespace
}  // namespace kestrel::tokenizer
