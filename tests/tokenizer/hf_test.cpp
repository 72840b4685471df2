// HF tokenizer.json: byte-level BPE and SentencePiece-style BPE on hand-made vocabularies whose
// encodings are worked out by hand in the comments.

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kestrel/tokenizer/tokenizer.h"
#include "tokenizer/regex.h"

namespace kestrel::tokenizer {
namespace {

using json = nlohmann::json;
using Ids = std::vector<int64_t>;

// GPT-2 byte-to-unicode spelling, written independently of the library's.
std::string spell_byte(int b) {
  const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  uint32_t cp = static_cast<uint32_t>(b);
  if (!printable) {
    uint32_t n = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF);
      if (!p) ++n;
    }
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

std::string spell(std::string_view bytes) {
  std::string s;
  for (char c : bytes) s += spell_byte(static_cast<uint8_t>(c));
  return s;
}

// Byte-level vocabulary: ids 0..255 are the bytes, then these merges (ids 256..264):
//   256 he, 257 ll, 258 hell, 259 hello, 260 Ġw, 261 or, 262 Ġwor, 263 ld, 264 Ġworld
// plus specials 265 <|end_of_text|>, 266 <|begin_of_text|>.
json byte_level_json(bool pair_merges = false) {
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[spell_byte(b)] = b;
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {spell(" "), "w"},
      {"o", "r"}, {spell(" w"), "or"}, {"l", "d"}, {spell(" wor"), "ld"}};
  json merges_json = json::array();
  int64_t id = 256;
  for (const auto& [a, b] : merges) {
    vocab[a + b] = id++;
    if (pair_merges) {
      merges_json.push_back(json::array({a, b}));
    } else {
      merges_json.push_back(a + " " + b);
    }
  }
  json j;
  j["version"] = "1.0";
  j["added_tokens"] = json::array(
      {{{"id", 265}, {"content", "<|end_of_text|>"}, {"special", true}, {"lstrip", false}, {"rstrip", false},
        {"single_word", false}, {"normalized", false}},
       {{"id", 266}, {"content", "<|begin_of_text|>"}, {"special", true}, {"lstrip", false}, {"rstrip", false},
        {"single_word", false}, {"normalized", false}}});
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}};
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<|begin_of_text|>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"pair", json::array()},
      {"special_tokens",
       {{"<|begin_of_text|>", {{"id", "<|begin_of_text|>"}, {"ids", {266}}, {"tokens", {"<|begin_of_text|>"}}}}}}};
  j["decoder"] = {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}};
  j["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"byte_fallback", false},
                {"vocab", vocab}, {"merges", merges_json}};
  return j;
}

// SentencePiece-style (Llama 2) vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>,
// 259 ▁, 260 h, 261 e, 262 l, 263 o, 264 w, 265 r, 266 d, then merges
//   267 ▁h, 268 ll, 269 ▁he, 270 ▁hell, 271 ▁hello, 272 ▁w, 273 or, 274 ▁wor, 275 ld, 276 ▁world.
const std::string kMeta = "\xE2\x96\x81";  // ▁

json sentencepiece_json() {
  json vocab = json::object();
  vocab["<unk>"] = 0;
  vocab["<s>"] = 1;
  vocab["</s>"] = 2;
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    vocab[name] = 3 + b;
  }
  int64_t id = 259;
  for (const std::string& c : {kMeta, std::string("h"), std::string("e"), std::string("l"), std::string("o"),
                               std::string("w"), std::string("r"), std::string("d")}) {
    vocab[c] = id++;
  }
  const std::vector<std::pair<std::string, std::string>> merges = {
      {kMeta, "h"}, {"l", "l"}, {kMeta + "h", "e"}, {kMeta + "he", "ll"}, {kMeta + "hell", "o"},
      {kMeta, "w"}, {"o", "r"}, {kMeta + "w", "or"}, {"l", "d"},         {kMeta + "wor", "ld"}};
  json merges_json = json::array();
  for (const auto& [a, b] : merges) {
    vocab[a + b] = id++;
    merges_json.push_back(a + " " + b);
  }
  const auto added = [](int64_t i, const char* content) {
    return json{{"id", i},         {"content", content}, {"special", true},    {"lstrip", false},
                {"rstrip", false}, {"single_word", false}, {"normalized", false}};
  };
  json j;
  j["added_tokens"] = json::array({added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")});
  j["normalizer"] = {{"type", "Sequence"},
                     {"normalizers", json::array({{{"type", "Prepend"}, {"prepend", kMeta}},
                                                  {{"type", "Replace"},
                                                   {"pattern", {{"String", " "}}},
                                                   {"content", kMeta}}})}};
  j["pre_tokenizer"] = nullptr;
  j["post_processor"] = {
      {"type", "TemplateProcessing"},
      {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                              {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
      {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Replace"}, {"pattern", {{"String", kMeta}}}, {"content", " "}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}},
                                            {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}};
  j["model"] = {{"type", "BPE"},         {"dropout", nullptr}, {"unk_token", "<unk>"}, {"fuse_unk", true},
                {"byte_fallback", true}, {"vocab", vocab},     {"merges", merges_json}};
  return j;
}

std::unique_ptr<Tokenizer> load(const json& j) {
  auto t = load_hf_tokenizer(std::string_view(j.dump()));
  EXPECT_TRUE(t.ok()) << t.error().to_string();
  return t.ok() ? std::move(t).value() : nullptr;
}

Ids encode(const Tokenizer& t, std::string_view text, bool add_bos = false) {
  auto ids = t.encode(text, add_bos);
  EXPECT_TRUE(ids.ok()) << ids.error().to_string();
  return ids.ok() ? *ids : Ids{};
}

std::string decode(const Tokenizer& t, const Ids& ids) {
  auto text = t.decode(ids);
  EXPECT_TRUE(text.ok()) << text.error().to_string();
  return text.ok() ? *text : std::string("<error>");
}

const std::vector<std::string> kRoundTripTexts = {
    "",
    "a",
    "hello world",
    "Hello World!",
    "  multiple   spaces   inside  ",
    " leading space",
    "trailing space ",
    "tabs\tand\nnewlines\n\n\nend",
    "\r\nwindows\r\nlines",
    "emoji \xF0\x9F\x98\x80\xF0\x9F\x8E\x89 mixed",
    "\xE4\xB8\xAD\xE6\x96\x87\xE5\xAD\x97\xE7\xAC\xA6",          // 中文字符
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87",  // 日本語の文
    "\xC3\x9Cn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9 \xC3\xA0\xC3\xA7" "c\xC3\xA9nts",  // Ünïcödé àçcénts
    "it's I'm we'll they'd you've THEY'RE",
    "numbers 1234567890 and 3.14159",
    "punctuation!!! ??? ... ---",
    "code: int main() { return 0; }",
};

// ---------------------------------------------------------------------------------------------
// Byte-level BPE

TEST(HfTokenizer, ByteLevelExactIds) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->vocab_size(), 267);
  // "hello" merges he, ll, hell, hello; " world" merges Ġw, or, Ġwor, ld, Ġworld.
  EXPECT_EQ(encode(*t, "hello world"), (Ids{259, 264}));
  // Two spaces: GPT-2 splits "hello", " ", " world".
  EXPECT_EQ(encode(*t, "hello  world"), (Ids{259, 32, 264}));
  // Capital H: only l+l merges (there is no "e ll").
  EXPECT_EQ(encode(*t, "Hello"), (Ids{'H', 'e', 257, 'o'}));
  // No leading space: "world" is w, or, ld.
  EXPECT_EQ(encode(*t, "world"), (Ids{'w', 261, 263}));
  EXPECT_EQ(encode(*t, ""), Ids{});
  EXPECT_EQ(decode(*t, {259, 264}), "hello world");
}

TEST(HfTokenizer, ByteLevelPairMergesFormat) {
  auto t = load(byte_level_json(/*pair_merges=*/true));
  ASSERT_TRUE(t);
  EXPECT_EQ(encode(*t, "hello world"), (Ids{259, 264}));
}

TEST(HfTokenizer, MergeOrderMatters) {
  const auto make = [](std::vector<std::string> merges) {
    json vocab = json::object();
    for (int b = 0; b < 256; ++b) vocab[spell_byte(b)] = b;
    vocab["ab"] = 256;
    vocab["bc"] = 257;
    json j;
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}};
    j["decoder"] = {{"type", "ByteLevel"}};
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}};
    return j;
  };
  auto ab_first = load(make({"a b", "b c"}));
  auto bc_first = load(make({"b c", "a b"}));
  ASSERT_TRUE(ab_first && bc_first);
  EXPECT_EQ(encode(*ab_first, "abc"), (Ids{256, 'c'}));
  EXPECT_EQ(encode(*bc_first, "abc"), (Ids{'a', 257}));
  // Equal ranks never happen; on one rank the leftmost pair merges first.
  EXPECT_EQ(encode(*ab_first, "ababab"), (Ids{256, 256, 256}));
}

TEST(HfTokenizer, ByteLevelSpecialTokensInText) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bos_id(), 266);
  EXPECT_EQ(t->eos_ids(), (Ids{265}));
  EXPECT_TRUE(t->is_special(265));
  EXPECT_FALSE(t->is_special(259));
  // The special is matched whole; the text after it is a new segment ("world": w, or, ld).
  EXPECT_EQ(encode(*t, "hello<|end_of_text|>world"), (Ids{259, 265, 'w', 261, 263}));
  EXPECT_EQ(encode(*t, "hello world", /*add_bos=*/true), (Ids{266, 259, 264}));
  EXPECT_EQ(encode(*t, "<|begin_of_text|>hello"), (Ids{266, 259}));
  EXPECT_EQ(decode(*t, {266, 259, 265}), "<|begin_of_text|>hello<|end_of_text|>");
  // A partial special is plain text.
  EXPECT_EQ(encode(*t, "<|end_of"), (Ids{'<', '|', 'e', 'n', 'd', '_', 'o', 'f'}));
  EXPECT_EQ(t->token_id("<|end_of_text|>"), 265);
  EXPECT_EQ(t->token_id(spell(" world")), 264);
  EXPECT_EQ(t->token_id("nope"), std::nullopt);
}

TEST(HfTokenizer, ByteLevelRoundTrip) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  for (const std::string& text : kRoundTripTexts) {
    EXPECT_EQ(decode(*t, encode(*t, text)), text) << text;
  }
  EXPECT_EQ(decode(*t, encode(*t, "a<|end_of_text|>b")), "a<|end_of_text|>b");
}

TEST(HfTokenizer, TokenBytesIsRawAndMayBePartialUtf8) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  const Ids ids = encode(*t, "\xC3\xA9");  // é = C3 A9, two byte tokens
  ASSERT_EQ(ids, (Ids{0xC3, 0xA9}));
  EXPECT_EQ(*t->token_bytes(0xC3), "\xC3");
  EXPECT_EQ(*t->token_bytes(264), " world");
  EXPECT_EQ(decode(*t, {0xC3}), "\xEF\xBF\xBD");  // lone lead byte -> U+FFFD
}

TEST(HfTokenizer, Llama3SplitPattern) {
  // Split(Llama-3 regex, Isolated) + ByteLevel(use_regex false): digits group in threes, so
  // with a "3 4" merge "12345" stays 1,2,3 | 4,5 while GPT-2's pattern lets 3 and 4 merge.
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[spell_byte(b)] = b;
  vocab["34"] = 256;
  json j;
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", json::array({{{"type", "Split"},
                                                        {"pattern", {{"Regex", llama3}}},
                                                        {"behavior", "Isolated"},
                                                        {"invert", false}},
                                                       {{"type", "ByteLevel"},
                                                        {"add_prefix_space", false},
                                                        {"trim_offsets", true},
                                                        {"use_regex", false}}})}};
  j["decoder"] = {{"type", "ByteLevel"}};
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"3 4"}}, {"ignore_merges", true}};
  auto llama = load(j);
  ASSERT_TRUE(llama);
  EXPECT_EQ(encode(*llama, "12345"), (Ids{'1', '2', '3', '4', '5'}));
  EXPECT_EQ(encode(*llama, "345"), (Ids{256, '5'}));
  j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  auto gpt2_digits = load(j);
  ASSERT_TRUE(gpt2_digits);
  EXPECT_EQ(encode(*gpt2_digits, "12345"), (Ids{'1', '2', 256, '5'}));
  for (const std::string& text : kRoundTripTexts) EXPECT_EQ(decode(*llama, encode(*llama, text)), text) << text;
}

TEST(HfTokenizer, RegexPiecesMatchTheReferenceSplits) {
  const auto pieces = [](std::string_view pattern, std::string_view text) {
    auto re = detail::Regex::compile(pattern);
    EXPECT_TRUE(re.ok()) << re.error().to_string();
    std::vector<std::string> out;
    size_t pos = 0;
    const auto matches = re->find_all(text);
    EXPECT_TRUE(matches.ok());
    for (const auto& [b, e] : *matches) {
      EXPECT_EQ(b, pos) << "gap before " << b;
      out.emplace_back(text.substr(b, e - b));
      pos = e;
    }
    EXPECT_EQ(pos, text.size());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(pieces(detail::kGpt2Pattern, "Hello, how are  you?"),
            (V{"Hello", ",", " how", " are", " ", " you", "?"}));
  EXPECT_EQ(pieces(detail::kGpt2Pattern, "it's 2024!\n\n  ok"), (V{"it", "'s", " 2024", "!", "\n\n ", " ok"}));
  const std::string llama3 =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  EXPECT_EQ(pieces(llama3, "I'M 12345 (hi)\n\n  there"),
            (V{"I", "'M", " ", "123", "45", " (", "hi", ")\n\n", " ", " there"}));
  // Unicode letters and numbers through UCP: "日本" is letters, "٣" (Arabic-Indic 3) a number.
  EXPECT_EQ(pieces(llama3, "x\xE6\x97\xA5\xE6\x9C\xAC \xD9\xA3"), (V{"x\xE6\x97\xA5\xE6\x9C\xAC", " ", "\xD9\xA3"}));
}

TEST(HfTokenizer, InvalidUtf8InputStillRoundTripsBytes) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  const std::string bad = "ok\xFF\xFEz";
  const Ids ids = encode(*t, bad);
  std::string bytes;
  for (int64_t id : ids) bytes += *t->token_bytes(id);
  EXPECT_EQ(bytes, bad);
}

// ---------------------------------------------------------------------------------------------
// SentencePiece-style BPE

TEST(HfTokenizer, SentencePieceExactIds) {
  auto t = load(sentencepiece_json());
  ASSERT_TRUE(t);
  EXPECT_EQ(t->bos_id(), 1);
  EXPECT_EQ(t->eos_ids(), (Ids{2}));
  // "▁hello▁world": ▁h, ll (rank 1 beats ▁h+e rank 2), ▁he, ▁hell, ▁hello; ▁w, or, ▁wor, ld, ▁world.
  EXPECT_EQ(encode(*t, "hello world"), (Ids{271, 276}));
  EXPECT_EQ(encode(*t, "hello world", true), (Ids{1, 271, 276}));
  EXPECT_EQ(decode(*t, {271, 276}), "hello world");
  // With the bos rendered, the strip no longer applies to the first word (as HF does).
  EXPECT_EQ(decode(*t, {1, 271, 276}), "<s> hello world");
  EXPECT_EQ(encode(*t, ""), Ids{});
}

TEST(HfTokenizer, SentencePieceByteFallback) {
  auto t = load(sentencepiece_json());
  ASSERT_TRUE(t);
  // é (C3 A9) is not in the vocabulary: <0xC3> = 3 + 0xC3, <0xA9> = 3 + 0xA9.
  EXPECT_EQ(encode(*t, "h\xC3\xA9"), (Ids{267, 3 + 0xC3, 3 + 0xA9}));
  EXPECT_EQ(decode(*t, {267, 3 + 0xC3, 3 + 0xA9}), "h\xC3\xA9");
  EXPECT_EQ(*t->token_bytes(3 + 0xC3), "\xC3");
  EXPECT_EQ(*t->token_bytes(271), " hello");
  EXPECT_EQ(*t->piece_bytes(271, -1), "hello");
}

TEST(HfTokenizer, SentencePieceAddedTokens) {
  auto t = load(sentencepiece_json());
  ASSERT_TRUE(t);
  // Each text segment is normalized on its own, so both words get their ▁ (HF legacy behavior).
  EXPECT_EQ(encode(*t, "hello</s>"), (Ids{271, 2}));
  EXPECT_EQ(encode(*t, "<s>hello</s>world"), (Ids{1, 271, 2, 276}));
}

TEST(HfTokenizer, SentencePieceRoundTrip) {
  auto t = load(sentencepiece_json());
  ASSERT_TRUE(t);
  for (const std::string& text : kRoundTripTexts) {
    EXPECT_EQ(decode(*t, encode(*t, text)), text) << text;
  }
}

TEST(HfTokenizer, UnkTokenFusedWithoutByteFallback) {
  json j = sentencepiece_json();
  j["model"]["byte_fallback"] = false;
  auto t = load(j);
  ASSERT_TRUE(t);
  // ▁h then é and ü (both unknown) fuse into one <unk>.
  EXPECT_EQ(encode(*t, "h\xC3\xA9\xC3\xBC"), (Ids{267, 0}));
}

TEST(HfTokenizer, MetaspacePreTokenizer) {
  json j = sentencepiece_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "first"}, {"split", false}};
  j["decoder"] = {{"type", "Sequence"},
                  {"decoders", json::array({{{"type", "Metaspace"}, {"replacement", kMeta}, {"prepend_scheme", "first"}},
                                            {{"type", "ByteFallback"}},
                                            {{"type", "Fuse"}}})}};
  auto t = load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(encode(*t, "hello world"), (Ids{271, 276}));
  // "first": the segment after a special token gets no ▁ (w, or, ld).
  EXPECT_EQ(encode(*t, "hello</s>world"), (Ids{271, 2, 264, 273, 275}));
  EXPECT_EQ(decode(*t, {271, 276}), "hello world");
  j["pre_tokenizer"]["split"] = true;
  auto split = load(j);
  ASSERT_TRUE(split);
  EXPECT_EQ(encode(*split, "hello world"), (Ids{271, 276}));
  // A text that starts with a space gets no extra ▁ (it already starts with one), so the decoder's
  // strip loses that space: HF's Metaspace does the same.
  for (const std::string& text : kRoundTripTexts) {
    if (!text.empty() && text[0] == ' ') continue;
    EXPECT_EQ(decode(*t, encode(*t, text)), text) << text;
  }
}

TEST(HfTokenizer, SplitBehaviors) {
  // A Split on "-" with each behavior, observed through a vocabulary where "-x" and "x-" exist.
  json vocab = json::object();
  for (int b = 0; b < 256; ++b) vocab[spell_byte(b)] = b;
  vocab["a-"] = 256;
  vocab["-b"] = 257;
  vocab["--"] = 258;
  vocab["a-b"] = 259;
  const auto make = [&](const char* behavior, bool invert) {
    json j;
    j["pre_tokenizer"] = {{"type", "Sequence"},
                          {"pretokenizers", json::array({{{"type", "Split"},
                                                          {"pattern", {{"String", "-"}}},
                                                          {"behavior", behavior},
                                                          {"invert", invert}},
                                                         {{"type", "ByteLevel"}, {"use_regex", false}}})}};
    j["decoder"] = {{"type", "ByteLevel"}};
    j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", {"a -", "- b", "- -", "a- b"}}};
    return load(j);
  };
  // "a-b--b" split at '-'.
  EXPECT_EQ(encode(*make("Removed", false), "a-b--b"), (Ids{'a', 'b', 'b'}));
  EXPECT_EQ(encode(*make("Isolated", false), "a-b--b"), (Ids{'a', '-', 'b', '-', '-', 'b'}));
  EXPECT_EQ(encode(*make("MergedWithPrevious", false), "a-b--b"), (Ids{256, 'b', '-', '-', 'b'}));
  EXPECT_EQ(encode(*make("MergedWithNext", false), "a-b--b"), (Ids{'a', 257, '-', 257}));
  EXPECT_EQ(encode(*make("Contiguous", false), "a-b--b"), (Ids{'a', '-', 'b', 258, 'b'}));
  // Inverted Removed keeps only the matches.
  EXPECT_EQ(encode(*make("Removed", true), "a-b--b"), (Ids{'-', '-', '-'}));
}

TEST(HfTokenizer, AddedTokenStripping) {
  json j = byte_level_json();
  j["added_tokens"].push_back({{"id", 267}, {"content", "<mask>"}, {"special", true}, {"lstrip", true},
                               {"rstrip", false}, {"single_word", false}, {"normalized", false}});
  auto t = load(j);
  ASSERT_TRUE(t);
  // lstrip: the space before <mask> belongs to it.
  EXPECT_EQ(encode(*t, "hello <mask>"), (Ids{259, 267}));
}

// ---------------------------------------------------------------------------------------------
// Errors

TEST(HfTokenizer, MalformedJson) {
  auto t = load_hf_tokenizer(std::string_view("{\"model\": {"));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(t.error().message().find("malformed JSON"), std::string::npos) << t.error().message();
  const std::vector<uint8_t> bytes = {'[', '1', ']'};
  auto not_object = load_hf_tokenizer(std::span<const uint8_t>(bytes));
  ASSERT_FALSE(not_object.ok());
}

TEST(HfTokenizer, UnsupportedModelTypes) {
  for (const char* type : {"WordPiece", "Unigram", "WordLevel"}) {
    json j = byte_level_json();
    j["model"]["type"] = type;
    auto t = load_hf_tokenizer(std::string_view(j.dump()));
    ASSERT_FALSE(t.ok()) << type;
    EXPECT_EQ(t.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(t.error().message().find(type), std::string::npos) << t.error().message();
    EXPECT_NE(t.error().message().find("model.type"), std::string::npos) << t.error().message();
  }
}

TEST(HfTokenizer, MissingOrBadKeysAreNamed) {
  const auto error_of = [](const json& j) {
    auto t = load_hf_tokenizer(std::string_view(j.dump()));
    EXPECT_FALSE(t.ok());
    return t.ok() ? std::string() : t.error().message();
  };
  json j = byte_level_json();
  j["model"].erase("vocab");
  EXPECT_NE(error_of(j).find("model.vocab is missing"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j.erase("model");
  EXPECT_NE(error_of(j).find("model is missing"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["model"]["merges"][3] = "hell zzz";
  EXPECT_NE(error_of(j).find("model.merges[3]"), std::string::npos) << error_of(j);
  EXPECT_NE(error_of(j).find("zzz"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["model"]["vocab"]["h"] = "seven";
  EXPECT_NE(error_of(j).find("model.vocab['h']"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
  EXPECT_NE(error_of(j).find("BertPreTokenizer"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}};
  EXPECT_NE(error_of(j).find("pre_tokenizer.pattern.Regex"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["decoder"] = {{"type", "WordPiece"}};
  EXPECT_NE(error_of(j).find("decoder.type 'WordPiece'"), std::string::npos) << error_of(j);

  j = byte_level_json();
  j["added_tokens"][0].erase("id");
  EXPECT_NE(error_of(j).find("added_tokens[0].id is missing"), std::string::npos) << error_of(j);
}

TEST(HfTokenizer, DecodeOutOfRangeNamesTheId) {
  auto t = load(byte_level_json());
  ASSERT_TRUE(t);
  for (int64_t id : {int64_t{267}, int64_t{99999}, int64_t{-1}}) {
    auto text = t->decode(Ids{259, id});
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error().code(), ErrorCode::kOutOfRange);
    EXPECT_NE(text.error().message().find("token id " + std::to_string(id)), std::string::npos)
        << text.error().message();
    EXPECT_FALSE(t->token_bytes(id).ok());
  }
}

TEST(HfTokenizer, CharacterWithoutFallbackIsAnError) {
  json vocab = json::object();
  vocab["a"] = 0;
  json j;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", json::array()}};
  auto t = load(j);
  ASSERT_TRUE(t);
  EXPECT_EQ(encode(*t, "aa"), (Ids{0, 0}));
  auto bad = t->encode("ab", false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("'b'"), std::string::npos) << bad.error().message();
}

TEST(HfTokenizer, DamagedFilesFailCleanly) {
  // Every truncation and a few thousand single-byte corruptions of a valid file either load or
  // fail with an error; whatever loads can still encode and decode without crashing.
  for (const json& base : {byte_level_json(), sentencepiece_json()}) {
    const std::string good = base.dump();
    for (size_t len = 0; len < good.size(); len += 97) {
      EXPECT_FALSE(load_hf_tokenizer(std::string_view(good).substr(0, len)).ok()) << len;
    }
    uint64_t x = 42;
    const auto next = [&x] {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      return x >> 33;
    };
    const std::string charset = "{}[]\",:0123456789 -abnlrstu\\";
    for (int round = 0; round < 2000; ++round) {
      std::string damaged = good;
      damaged[next() % damaged.size()] = charset[next() % charset.size()];
      auto t = load_hf_tokenizer(std::string_view(damaged));
      if (!t.ok()) {
        EXPECT_FALSE(t.error().message().empty());
        continue;
      }
      auto ids = (*t)->encode("hello world <s> \xC3\xA9", true);
      if (ids.ok()) (void)(*t)->decode(*ids);
    }
  }
}

}  // namespace
}  // namespace kestrel::tokenizer
