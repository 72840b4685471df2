#include "kestrel/llm/chat_session.h"

#include <algorithm>

#include "kestrel/core/error_helpers.h"

namespace kestrel::llm {

Result<ChatSession> ChatSession::create(Runner& runner, ChatOptions options) {
  if (runner.tokenizer() == nullptr)
    return make_error(ErrorCode::kUnsupported, "this program carries no tokenizer, so it cannot chat");
  KESTREL_ASSIGN_OR_RETURN(auto chat_template, ChatTemplate::from_metadata(runner.program_metadata()));
  if (!chat_template)
    return make_error(ErrorCode::kNotFound, "this program has no chat template (export it from a checkpoint whose "
                                            "tokenizer_config.json or chat_template.jinja has one)");
  const int64_t vocab_size = runner.model_info().vocab_size;
  for (int64_t id : chat_template->tokens().end_of_turn_ids)
    if (id < 0 || id >= vocab_size)
      return make_error(ErrorCode::kInvalidArgument, "end-of-turn token {} is outside the vocabulary [0, {})", id,
                        vocab_size);
  return ChatSession(runner, std::move(*chat_template), std::move(options));
}

ChatSession::ChatSession(Runner& runner, ChatTemplate chat_template, ChatOptions options)
    : runner_(&runner), template_(std::move(chat_template)), options_(std::move(options)), messages_(opening()) {}

nlohmann::ordered_json ChatSession::opening() const {
  auto messages = nlohmann::ordered_json::array();
  if (!options_.system_prompt.empty())
    messages.push_back({{"role", "system"}, {"content", options_.system_prompt}});
  return messages;
}

void ChatSession::reset() {
  messages_ = opening();
  runner_->reset();
}

Result<ChatReply> ChatSession::send(const std::string& user_message, const GenerationConfig& config,
                                    const TextCallback& on_text) {
  nlohmann::ordered_json messages = messages_;
  messages.push_back({{"role", "user"}, {"content", user_message}});
  return answer(messages, config, on_text);
}

Result<ChatReply> ChatSession::respond(const nlohmann::ordered_json& messages, const GenerationConfig& config,
                                       const TextCallback& on_text) {
  return answer(messages, config, on_text);
}

Result<ChatReply> ChatSession::answer(const nlohmann::ordered_json& messages, const GenerationConfig& config,
                                      const TextCallback& on_text) {
  ChatReply reply;
  KESTREL_ASSIGN_OR_RETURN(reply.prompt, template_.render(messages, options_.render));
  KESTREL_ASSIGN_OR_RETURN(std::vector<int64_t> ids, template_.encode(*runner_->tokenizer(), reply.prompt));
  reply.prompt_tokens = static_cast<int64_t>(ids.size());
  GenerationConfig turn = config;
  turn.add_bos = false;  // the template and encode() decide about bos
  for (int64_t id : template_.tokens().end_of_turn_ids)
    if (std::find(turn.stop_token_ids.begin(), turn.stop_token_ids.end(), id) == turn.stop_token_ids.end())
      turn.stop_token_ids.push_back(id);
  KESTREL_ASSIGN_OR_RETURN(reply.generation, runner_->generate_context(ids, turn, on_text, &reply.reused_tokens));
  reply.text = reply.generation.text;
  messages_ = messages;
  messages_.push_back({{"role", "assistant"}, {"content", reply.text}});
  return reply;
}

}  // namespace kestrel::llm
