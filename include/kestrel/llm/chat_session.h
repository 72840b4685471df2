// A conversation with an instruct model through its chat template: each turn renders the
// whole conversation, reuses the cache of the tokens the previous turns already processed
// (only the new suffix is prefilled), and stops at the template's end-of-turn tokens.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "kestrel/core/result.h"
#include "kestrel/llm/chat_template.h"
#include "kestrel/llm/runner.h"

namespace kestrel::llm {

struct ChatOptions {
  std::string system_prompt;  // when not empty, the conversation opens with this system message
  ChatRenderOptions render;   // template variables (tools, enable_thinking, ...) and limits
};

struct ChatReply {
  std::string text;             // the assistant's reply as generated (end-of-turn token excluded)
  GenerationResult generation;  // its tokens, stop reason and stats
  std::string prompt;           // the rendered conversation the reply continues
  int64_t prompt_tokens = 0;    // tokens of that whole prompt
  int64_t reused_tokens = 0;    // of which the cache of earlier turns already held this many
};

class ChatSession {
 public:
  // Fails with kNotFound when the program has no chat template, kUnsupported when it has no
  // tokenizer. The runner must outlive the session; the session owns the runner's cache
  // while it is used (other generate calls invalidate only the reuse, not correctness).
  static Result<ChatSession> create(Runner& runner, ChatOptions options = {});

  // Adds a user message, answers it and adds the reply to the conversation. On failure the
  // conversation is unchanged.
  Result<ChatReply> send(const std::string& user_message, const GenerationConfig& config,
                         const TextCallback& on_text = nullptr);
  // Replaces the conversation by `messages` (a JSON list of {"role", "content", ...}; the
  // system prompt is not added), answers it and adds the reply.
  Result<ChatReply> respond(const nlohmann::ordered_json& messages, const GenerationConfig& config,
                            const TextCallback& on_text = nullptr);

  // The conversation so far, as the template sees it.
  const nlohmann::ordered_json& messages() const { return messages_; }
  const ChatTemplate& chat_template() const { return template_; }
  // Starts over (keeping the system prompt) and clears the runner's cache.
  void reset();

 private:
  ChatSession(Runner& runner, ChatTemplate chat_template, ChatOptions options);
  Result<ChatReply> answer(const nlohmann::ordered_json& messages, const GenerationConfig& config,
                           const TextCallback& on_text);
  nlohmann::ordered_json opening() const;

  Runner* runner_;
  ChatTemplate template_;
  ChatOptions options_;
  nlohmann::ordered_json messages_;
};

}  // namespace kestrel::llm
