// SPDX-License-Identifier: Apache-2.0
// The simulator continues an earlier greedy output exactly (sim/continuation.hpp), from the
// request body alone: chat's `continue_final_message` with the output so far as the final
// assistant message, completions' prompt followed by the text so far. What the rest says, how it
// finishes and the usage must be those of the uninterrupted request — the ground truth the
// gateway's stream migration is tested against (issue 37).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <memory>
#include <string>
#include <vector>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;

constexpr const char* kScript = R"(- match: "why is the sky blue"
  reasoning: "Rayleigh scattering; shorter wavelengths scatter more."
  text: "Sunlight scatters off air molecules, and blue light scatters the most, so the sky looks blue."
)";

json::object post_json(int port, const std::string& target, const json::object& body) {
  HttpClient client(port);
  const Response response = client.post(target, json::serialize(body));
  EXPECT_EQ(response.status, 200) << json::serialize(body) << " -> " << response.body;
  return parse_json(response.body).as_object();
}

json::object chat_request(const std::string& question, std::int64_t max_tokens) {
  return json::object{
      {"model", "Qwen3.6-35B-A3B"},
      {"messages", json::array{json::object{{"role", "user"}, {"content", question}}}},
      {"temperature", 0},
      {"max_tokens", max_tokens}};
}

/// The text deltas (content, or reasoning) of a streamed chat answer, one per event.
struct StreamedTurn {
  std::vector<std::string> reasoning;
  std::vector<std::string> content;
};

StreamedTurn stream_chat(int port, json::object body) {
  body["stream"] = true;
  auto stream =
      StreamingResponse::open(port, "POST", "/v1/chat/completions", json::serialize(body));
  EXPECT_EQ(stream->status(), 200);
  const SseResult result = read_sse(*stream);
  StreamedTurn turn;
  for (const auto& event : result.events) {
    if (event.data == "[DONE]") continue;
    const auto chunk = parse_json(event.data).as_object();
    if (chunk.at("choices").as_array().empty()) continue;
    const auto& delta = chunk.at("choices").at(0).at("delta").as_object();
    if (const auto* reasoning = delta.if_contains("reasoning"); reasoning && reasoning->is_string())
      turn.reasoning.emplace_back(reasoning->as_string());
    if (const auto* content = delta.if_contains("content");
        content && content->is_string() && !content->as_string().empty())
      turn.content.emplace_back(content->as_string());
  }
  return turn;
}

std::string joined(const std::vector<std::string>& pieces, std::size_t first, std::size_t last) {
  std::string out;
  for (std::size_t i = first; i < last && i < pieces.size(); ++i) out += pieces[i];
  return out;
}

class SimContinuation : public SimSuite {
 protected:
  static void SetUpTestSuite() {
    dir_ = std::make_unique<TempDir>();
    // Natural lengths of 20-40 tokens: the uninterrupted answers stop on their own.
    start({"--time-scale", "50", "--output-len", "uniform:20:40", "--script",
           dir_->write("turns.yaml", kScript)});
  }
  static inline std::unique_ptr<TempDir> dir_;
};

TEST_F(SimContinuation, ChatFinalMessageContinuesTheGreedyAnswer) {
  const json::object whole =
      post_json(port(), "/v1/chat/completions", chat_request("tell me about the sea", 100));
  const std::string text = str(whole.at("choices").at(0).at("message").at("content"));
  const std::int64_t prompt_tokens = i64(whole.at("usage").at("prompt_tokens"));
  const std::int64_t completion_tokens = i64(whole.at("usage").at("completion_tokens"));
  ASSERT_EQ(str(whole.at("choices").at(0).at("finish_reason")), "stop");
  ASSERT_GT(completion_tokens, 10);

  for (std::int64_t said : {std::int64_t{1}, std::int64_t{7}, completion_tokens - 1}) {
    // The first `said` words (each " word" is one token) as the open assistant message.
    std::size_t cut = 0;
    for (std::int64_t i = 0; i < said; ++i) cut = text.find(' ', cut + 1);
    if (cut == std::string::npos) cut = text.size();
    json::object body = chat_request("tell me about the sea", 100 - said);
    body["messages"].as_array().push_back(
        json::object{{"role", "assistant"}, {"content", text.substr(0, cut)}});
    body["continue_final_message"] = true;
    body["add_generation_prompt"] = false;
    const json::object rest = post_json(port(), "/v1/chat/completions", body);
    EXPECT_EQ(str(rest.at("choices").at(0).at("message").at("content")), text.substr(cut))
        << "after " << said << " tokens";
    EXPECT_EQ(str(rest.at("choices").at(0).at("finish_reason")), "stop");
    EXPECT_EQ(i64(rest.at("usage").at("completion_tokens")), completion_tokens - said);
    // The prompt is the earlier prompt and the words said so far.
    EXPECT_EQ(i64(rest.at("usage").at("prompt_tokens")), prompt_tokens + said);
  }
}

TEST_F(SimContinuation, ChatContinuationCutByItsMaxTokensEndsWhereTheWholeWould) {
  const json::object whole =
      post_json(port(), "/v1/chat/completions", chat_request("count the stars", 12));
  const std::string text = str(whole.at("choices").at(0).at("message").at("content"));
  ASSERT_EQ(str(whole.at("choices").at(0).at("finish_reason")), "length");
  const std::size_t cut = text.find(' ', text.find(' ', 1) + 1);  // two words said
  json::object body = chat_request("count the stars", 10);
  body["messages"].as_array().push_back(
      json::object{{"role", "assistant"}, {"content", text.substr(0, cut)}});
  body["continue_final_message"] = true;
  body["add_generation_prompt"] = false;
  const json::object rest = post_json(port(), "/v1/chat/completions", body);
  EXPECT_EQ(str(rest.at("choices").at(0).at("message").at("content")), text.substr(cut));
  EXPECT_EQ(str(rest.at("choices").at(0).at("finish_reason")), "length");
}

TEST_F(SimContinuation, CompletionsPromptEndingInItsOutputContinuesIt) {
  json::object request{{"model", "Qwen3.6-35B-A3B"},
                       {"prompt", "Once upon a time"},
                       {"temperature", 0},
                       {"max_tokens", 100}};
  const json::object whole = post_json(port(), "/v1/completions", request);
  const std::string text = str(whole.at("choices").at(0).at("text"));
  const std::int64_t completion_tokens = i64(whole.at("usage").at("completion_tokens"));
  ASSERT_GT(completion_tokens, 10);
  std::size_t cut = 0;
  for (int i = 0; i < 5; ++i) cut = text.find(' ', cut + 1);
  request["prompt"] = "Once upon a time" + text.substr(0, cut);
  request["max_tokens"] = 95;
  const json::object rest = post_json(port(), "/v1/completions", request);
  EXPECT_EQ(str(rest.at("choices").at(0).at("text")), text.substr(cut));
  EXPECT_EQ(str(rest.at("choices").at(0).at("finish_reason")),
            str(whole.at("choices").at(0).at("finish_reason")));
  EXPECT_EQ(i64(rest.at("usage").at("completion_tokens")), completion_tokens - 5);
}

TEST_F(SimContinuation, ReasoningTurnContinuesInItsContent) {
  const StreamedTurn whole = stream_chat(port(), chat_request("why is the sky blue?", 200));
  ASSERT_FALSE(whole.reasoning.empty());
  ASSERT_GT(whole.content.size(), 4u);
  const std::string reasoning = joined(whole.reasoning, 0, whole.reasoning.size());
  json::object body = chat_request("why is the sky blue?", 200);
  body["messages"].as_array().push_back(json::object{{"role", "assistant"},
                                                     {"reasoning_content", reasoning},
                                                     {"content", joined(whole.content, 0, 3)}});
  body["continue_final_message"] = true;
  body["add_generation_prompt"] = false;
  const StreamedTurn rest = stream_chat(port(), body);
  EXPECT_TRUE(rest.reasoning.empty()) << "the reasoning was over before the cut";
  EXPECT_EQ(rest.content, std::vector<std::string>(whole.content.begin() + 3, whole.content.end()));
}

TEST_F(SimContinuation, SampledRequestsAreNotContinued) {
  // At temperature 1 without a seed each answer is drawn anew: no earlier output to continue.
  json::object request{{"model", "Qwen3.6-35B-A3B"},
                       {"prompt", "Once upon a time"},
                       {"temperature", 0},
                       {"max_tokens", 30}};
  const std::string text =
      str(post_json(port(), "/v1/completions", request).at("choices").at(0).at("text"));
  std::size_t cut = 0;
  for (int i = 0; i < 5; ++i) cut = text.find(' ', cut + 1);
  request["prompt"] = "Once upon a time" + text.substr(0, cut);
  request["temperature"] = 1.0;
  request["max_tokens"] = 25;
  bool any_other = false;
  for (int i = 0; i < 3 && !any_other; ++i)
    any_other = str(post_json(port(), "/v1/completions", request).at("choices").at(0).at("text")) !=
                text.substr(cut);
  EXPECT_TRUE(any_other);
}

TEST_F(SimContinuation, BothContinueAndGenerationPromptIsVllmsError) {
  json::object body = chat_request("hello", 10);
  body["messages"].as_array().push_back(json::object{{"role", "assistant"}, {"content", " hi"}});
  body["continue_final_message"] = true;
  HttpClient client(port());
  const Response response = client.post("/v1/chat/completions", json::serialize(body));
  EXPECT_EQ(response.status, 400);
  EXPECT_NE(error_message(response.body)
                .find("Cannot set both `continue_final_message` and `add_generation_prompt`"),
            std::string::npos)
      << response.body;
}

}  // namespace
}  // namespace llmux::test
