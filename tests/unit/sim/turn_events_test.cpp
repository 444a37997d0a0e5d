// SPDX-License-Identifier: Apache-2.0
// Reasoning and tool calls from the simulator (issue 14, part 3): every event and body shape
// compared field by field with what vLLM emits for Qwen3 with --reasoning-parser qwen3 and
// --enable-auto-tool-choice --tool-call-parser qwen3_coder.
//
// Sources (vllm-project/vllm):
// - Responses streams: vllm/entrypoints/openai/responses/simple_streaming_events.py at main
//   (commit 25af204a): reasoning item added (summary [], status in_progress) + content_part.added
//   (reasoning_text) → response.reasoning_text.delta → reasoning_text.done, content_part.done,
//   output_item.done; function_call item added (arguments "", status in_progress) →
//   response.function_call_arguments.delta → .done (arguments, name) and output_item.done.
//   vLLM 0.11 (serving_responses.py, commit 00b6063f) still refused tools without Harmony
//   ("Tool use is not supported in Responses API without Harmony"), so these follow main.
// - Responses bodies: serving_responses.py _make_response_output_items (rs_ reasoning item with
//   content [reasoning_text], msg_ message, fc_/call_ function_call items, status completed).
// - Chat: vllm/entrypoints/openai/tool_parsers/qwen3coder_tool_parser.py (commit 0054011d): the
//   header delta {index, id, type "function", function {name, arguments ""}}, then argument
//   deltas {index, function {arguments}}; finish_reason "tool_calls"; the `reasoning` field of
//   current vLLM (it dropped `reasoning_content`).
// - Event field sets: the openai SDK's types (openai.types.responses.*Event) vLLM builds.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "core/tokenizer.hpp"
#include "sim/frames.hpp"
#include "sim/job.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

struct Ev {
  std::string name;
  json::object data;
};

std::vector<Ev> parse_sse(const std::string& raw) {
  std::vector<Ev> out;
  std::size_t pos = 0;
  while (pos < raw.size()) {
    auto end = raw.find("\n\n", pos);
    if (end == std::string::npos) break;
    std::string block = raw.substr(pos, end - pos);
    pos = end + 2;
    Ev e;
    std::size_t lp = 0;
    while (lp < block.size()) {
      auto nl = block.find('\n', lp);
      std::string line = block.substr(lp, nl == std::string::npos ? std::string::npos : nl - lp);
      lp = nl == std::string::npos ? block.size() : nl + 1;
      if (line.starts_with("event: ")) e.name = line.substr(7);
      if (line.starts_with("data: ") && line != "data: [DONE]")
        e.data = json::parse(line.substr(6)).as_object();
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::set<std::string> keys(const json::object& o) {
  std::set<std::string> k;
  for (const auto& kv : o) k.insert(std::string(kv.key()));
  return k;
}

TurnPlan sample_plan() {
  return make_plan("I should run ls.", "Listing now.",
                   {{"shell", R"({"command": ["ls", "-la"], "workdir": "/tmp"})"}});
}

// Runs a plan through the frame writers as the engine driver does, token by token.
struct Streamed {
  boost::asio::io_context ioc;
  Job job{ioc.get_executor()};
  std::vector<Ev> events;
  TurnOutput out;

  Streamed(Endpoint ep, TurnPlan plan, std::size_t max_tokens = SIZE_MAX) {
    job.req.endpoint = ep;
    job.req.stream = true;
    job.req.model = "Qwen3.6-35B-A3B";
    job.meta.endpoint = ep;
    job.meta.id = ep == Endpoint::Chat ? "chatcmpl-1" : "resp_1";
    job.meta.item_id = "msg_1";
    job.meta.model = job.req.model;
    const std::size_t n = std::min(plan.pieces.size(), max_tokens);
    job.meta.finish_reason = n == plan.pieces.size() ? "stop" : "length";
    job.turn_plan = std::make_shared<TurnPlan>(std::move(plan));
    append_opening_frames(job);
    for (std::size_t i = 0; i < n; ++i) {
      job.emitted = static_cast<int>(i + 1);
      job.usage.completion_tokens = job.emitted;
      append_token_frame(job, static_cast<int>(i), i + 1 == n);
    }
    out = job.turn_plan->emitted(n);
    if (ep == Endpoint::Responses) {
      auto resp = response_object(job.meta, job.req, "completed", out.text, job.usage, &out);
      append_responses_done_events(job, out.text, resp);
    } else {
      append_done_frames(job);
    }
    events = parse_sse(job.out);
  }
};

TEST(TurnPlanTest, PiecesAreTokensOfReasoningTextAndCalls) {
  TurnPlan p = sample_plan();
  const auto& c = p.full.calls.at(0);
  EXPECT_TRUE(c.call_id.starts_with("call_"));
  EXPECT_EQ(c.call_id.size(), 5u + 24u);  // qwen3_coder: call_<24 hex>
  EXPECT_TRUE(c.item_id.starts_with("fc_"));
  EXPECT_TRUE(p.full.reasoning_id.starts_with("rs_"));
  // reasoning tokens + text tokens + one header + argument tokens.
  EXPECT_EQ(p.pieces.size(), Tokenizer::count(p.full.reasoning) + Tokenizer::count(p.full.text) +
                                 1 + Tokenizer::count(c.arguments));
  const TurnOutput all = p.emitted(p.pieces.size());
  EXPECT_EQ(all.reasoning, p.full.reasoning);
  EXPECT_EQ(all.text, p.full.text);
  ASSERT_EQ(all.calls.size(), 1u);
  EXPECT_EQ(all.calls[0].arguments, c.arguments);
  EXPECT_EQ(all.reasoning_tokens, static_cast<std::int64_t>(Tokenizer::count(p.full.reasoning)));
  // Cut in the middle of the arguments: the call is there with what was generated.
  const TurnOutput cut = p.emitted(p.pieces.size() - 2);
  ASSERT_EQ(cut.calls.size(), 1u);
  EXPECT_LT(cut.calls[0].arguments.size(), c.arguments.size());
}

TEST(ResponsesTurnEvents, EveryEventHasVllmsFieldsInVllmsOrder) {
  Streamed s(Endpoint::Responses, sample_plan());
  const TurnPlan& p = *s.job.turn_plan;
  const auto& call = p.full.calls[0];
  // The events in order, with the field set of each (openai SDK event types).
  const std::set<std::string> added{"type", "sequence_number", "output_index", "item"};
  const std::set<std::string> part{"type",    "sequence_number", "output_index",
                                   "item_id", "content_index",   "part"};
  const std::set<std::string> rdelta{"type",    "sequence_number", "output_index",
                                     "item_id", "content_index",   "delta"};
  const std::set<std::string> rdone{"type",    "sequence_number", "output_index",
                                    "item_id", "content_index",   "text"};
  const std::set<std::string> tdelta{"type",          "sequence_number", "output_index", "item_id",
                                     "content_index", "delta",           "logprobs"};
  const std::set<std::string> tdone{
      "type", "sequence_number", "output_index", "item_id", "content_index", "text", "logprobs"};
  const std::set<std::string> adelta{"type", "sequence_number", "output_index", "item_id", "delta"};
  const std::set<std::string> adone{"type",    "sequence_number", "output_index",
                                    "item_id", "arguments",       "name"};
  std::vector<std::pair<std::string, const std::set<std::string>*>> want;
  const std::set<std::string> resp{"type", "sequence_number", "response"};
  want.push_back({"response.created", &resp});
  want.push_back({"response.in_progress", &resp});
  want.push_back({"response.output_item.added", &added});
  want.push_back({"response.content_part.added", &part});
  for (std::size_t i = 0; i < Tokenizer::count(p.full.reasoning); ++i)
    want.push_back({"response.reasoning_text.delta", &rdelta});
  want.push_back({"response.reasoning_text.done", &rdone});
  want.push_back({"response.content_part.done", &part});
  want.push_back({"response.output_item.done", &added});
  want.push_back({"response.output_item.added", &added});
  want.push_back({"response.content_part.added", &part});
  for (std::size_t i = 0; i < Tokenizer::count(p.full.text); ++i)
    want.push_back({"response.output_text.delta", &tdelta});
  want.push_back({"response.output_text.done", &tdone});
  want.push_back({"response.content_part.done", &part});
  want.push_back({"response.output_item.done", &added});
  want.push_back({"response.output_item.added", &added});
  for (std::size_t i = 0; i < Tokenizer::count(call.arguments); ++i)
    want.push_back({"response.function_call_arguments.delta", &adelta});
  want.push_back({"response.function_call_arguments.done", &adone});
  want.push_back({"response.output_item.done", &added});
  want.push_back({"response.completed", &resp});

  ASSERT_EQ(s.events.size(), want.size());
  std::string reasoning, text, args;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const Ev& e = s.events[i];
    SCOPED_TRACE(testing::Message() << "event " << i << " " << e.name);
    EXPECT_EQ(e.name, want[i].first);
    EXPECT_EQ(e.data.at("type"), json::value(want[i].first));
    EXPECT_EQ(e.data.at("sequence_number"), static_cast<std::int64_t>(i));
    EXPECT_EQ(keys(e.data), *want[i].second);
    if (e.name == "response.reasoning_text.delta") {
      reasoning += e.data.at("delta").as_string();
      EXPECT_EQ(e.data.at("item_id"), json::value(p.full.reasoning_id));
      EXPECT_EQ(e.data.at("output_index"), 0);
      EXPECT_EQ(e.data.at("content_index"), 0);
    } else if (e.name == "response.output_text.delta") {
      text += e.data.at("delta").as_string();
      EXPECT_EQ(e.data.at("output_index"), 1);
    } else if (e.name == "response.function_call_arguments.delta") {
      args += e.data.at("delta").as_string();
      EXPECT_EQ(e.data.at("item_id"), json::value(call.item_id));
      EXPECT_EQ(e.data.at("output_index"), 2);
    }
  }
  EXPECT_EQ(reasoning, p.full.reasoning);
  EXPECT_EQ(text, p.full.text);
  EXPECT_EQ(args, call.arguments);

  // The items as vLLM writes them when they open and close.
  const json::object& r_added = s.events[2].data.at("item").as_object();
  EXPECT_EQ(keys(r_added), (std::set<std::string>{"id", "summary", "type", "content",
                                                  "encrypted_content", "status"}));
  EXPECT_EQ(r_added.at("type"), "reasoning");
  EXPECT_EQ(r_added.at("status"), "in_progress");
  EXPECT_EQ(r_added.at("summary"), json::array{});
  EXPECT_EQ(s.events[3].data.at("part"), json::parse(R"({"text":"","type":"reasoning_text"})"));
  const std::size_t r_done = 4 + Tokenizer::count(p.full.reasoning);
  EXPECT_EQ(s.events[r_done].data.at("text"), json::value(p.full.reasoning));
  const json::object& r_item = s.events[r_done + 2].data.at("item").as_object();
  EXPECT_EQ(r_item.at("status"), "completed");
  const json::value want_content =
      json::array{json::object{{"text", p.full.reasoning}, {"type", "reasoning_text"}}};
  EXPECT_EQ(r_item.at("content"), want_content);

  const std::size_t fc_added = s.events.size() - 4 - Tokenizer::count(call.arguments);
  EXPECT_EQ(s.events[fc_added].data.at("item"),
            json::parse(R"({"arguments":"","call_id":")" + call.call_id +
                        R"(","name":"shell","type":"function_call","id":")" + call.item_id +
                        R"(","status":"in_progress"})"));
  const Ev& a_done = s.events[s.events.size() - 3];
  EXPECT_EQ(a_done.data.at("arguments"), json::value(call.arguments));
  EXPECT_EQ(a_done.data.at("name"), "shell");
  const json::object& fc_item = s.events[s.events.size() - 2].data.at("item").as_object();
  EXPECT_EQ(fc_item.at("status"), "completed");
  EXPECT_EQ(fc_item.at("arguments"), json::value(call.arguments));
  EXPECT_EQ(fc_item.at("call_id"), json::value(call.call_id));

  // response.completed: the three items, usage with reasoning tokens.
  const json::object& done = s.events.back().data.at("response").as_object();
  const auto& output = done.at("output").as_array();
  ASSERT_EQ(output.size(), 3u);
  EXPECT_EQ(output[0].at("type"), "reasoning");
  EXPECT_TRUE(output[0].at("status").is_null());  // "Only the last output item has status"
  EXPECT_EQ(output[1].at("type"), "message");
  EXPECT_EQ(output[1].at("content").at(0).at("text"), json::value(p.full.text));
  EXPECT_EQ(output[2], json::value(fc_item));
  EXPECT_EQ(done.at("usage").at("output_tokens_details").at("reasoning_tokens"),
            static_cast<std::int64_t>(Tokenizer::count(p.full.reasoning)));
}

TEST(ResponsesTurnEvents, CallOnlyTurnOpensWithTheFunctionCall) {
  Streamed s(Endpoint::Responses, make_plan("", "", {{"shell", R"({"command": ["ls"]})"}}));
  ASSERT_GE(s.events.size(), 4u);
  EXPECT_EQ(s.events[2].name, "response.output_item.added");
  EXPECT_EQ(s.events[2].data.at("item").at("type"), "function_call");
  EXPECT_EQ(s.events[2].data.at("output_index"), 0);
  const auto& output = s.events.back().data.at("response").at("output").as_array();
  ASSERT_EQ(output.size(), 1u);
  EXPECT_EQ(output[0].at("type"), "function_call");
}

TEST(ChatTurnFrames, ReasoningContentAndToolCallDeltas) {
  Streamed s(Endpoint::Chat, sample_plan());
  const TurnPlan& p = *s.job.turn_plan;
  const auto& call = p.full.calls[0];
  ASSERT_GE(s.events.size(), 3u);
  // The role chunk first, [DONE] last.
  EXPECT_EQ(s.events[0].data.at("choices").at(0).at("delta"),
            json::parse(R"({"role":"assistant","content":""})"));
  std::string reasoning, content, args;
  int headers = 0;
  for (std::size_t i = 1; i + 1 < s.events.size(); ++i) {
    const auto& choice = s.events[i].data.at("choices").at(0).as_object();
    const auto& d = choice.at("delta").as_object();
    ASSERT_EQ(d.size(), 1u) << json::serialize(d);
    if (d.contains("reasoning")) reasoning += d.at("reasoning").as_string();
    if (d.contains("content")) content += d.at("content").as_string();
    if (d.contains("tool_calls")) {
      const auto& tc = d.at("tool_calls").at(0).as_object();
      EXPECT_EQ(tc.at("index"), 0);
      if (tc.contains("id")) {
        ++headers;
        EXPECT_EQ(keys(tc), (std::set<std::string>{"id", "type", "index", "function"}));
        EXPECT_EQ(tc.at("id"), json::value(call.call_id));
        EXPECT_EQ(tc.at("type"), "function");
        EXPECT_EQ(tc.at("function"), json::parse(R"({"name":"shell","arguments":""})"));
      } else {
        EXPECT_EQ(keys(tc), (std::set<std::string>{"index", "function"}));
        args += tc.at("function").at("arguments").as_string();
      }
    }
    const bool last = i + 2 == s.events.size();
    EXPECT_EQ(choice.at("finish_reason"), last ? json::value("tool_calls") : json::value()) << i;
  }
  EXPECT_EQ(headers, 1);
  EXPECT_EQ(reasoning, p.full.reasoning);
  EXPECT_EQ(content, p.full.text);
  EXPECT_EQ(args, call.arguments);
  EXPECT_TRUE(s.events.back().data.empty());  // data: [DONE]
}

TEST(ChatTurnFrames, CutByMaxTokensFinishesWithLength) {
  TurnPlan p = sample_plan();
  const std::size_t n = p.pieces.size() - 3;
  Streamed s(Endpoint::Chat, std::move(p), n);
  const auto& last = s.events[s.events.size() - 2].data.at("choices").at(0);
  EXPECT_EQ(last.at("finish_reason"), "length");
}

TEST(ChatTurnBody, MessageHasReasoningContentAndToolCalls) {
  TurnPlan p = sample_plan();
  ResponseMeta m;
  m.endpoint = Endpoint::Chat;
  m.id = "chatcmpl-1";
  m.model = "Qwen3.6-35B-A3B";
  m.finish_reason = "stop";
  Usage u{10, static_cast<std::int64_t>(p.pieces.size())};
  const auto body = json::parse(chat_turn_body(m, p.full, u)).as_object();
  const auto& choice = body.at("choices").at(0).as_object();
  EXPECT_EQ(choice.at("finish_reason"), "tool_calls");
  const auto& msg = choice.at("message").as_object();
  EXPECT_EQ(keys(msg), (std::set<std::string>{"role", "content", "refusal", "annotations", "audio",
                                              "function_call", "tool_calls", "reasoning"}));
  EXPECT_EQ(msg.at("reasoning"), json::value(p.full.reasoning));
  EXPECT_EQ(msg.at("content"), json::value(p.full.text));
  const auto& c = p.full.calls[0];
  const json::value want_calls = json::array{
      json::object{{"id", c.call_id},
                   {"type", "function"},
                   {"function", json::object{{"name", "shell"}, {"arguments", c.arguments}}}}};
  EXPECT_EQ(msg.at("tool_calls"), want_calls);
  EXPECT_EQ(body.at("usage").at("completion_tokens"), u.completion_tokens);

  // A call-only turn: content null (vLLM: no text besides the call).
  TurnPlan q = make_plan("", "", {{"shell", "{}"}});
  const auto b2 = json::parse(chat_turn_body(m, q.full, u)).as_object();
  EXPECT_TRUE(b2.at("choices").at(0).at("message").at("content").is_null());
  EXPECT_TRUE(b2.at("choices").at(0).at("message").at("reasoning").is_null());
}

}  // namespace
}  // namespace llmux::sim
