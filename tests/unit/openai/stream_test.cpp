// SPDX-License-Identifier: Apache-2.0
#include "openai/stream.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "openai/json_read.hpp"
#include "openai/sse.hpp"
#include "vllm_streams.hpp"

namespace llmux::openai {
namespace {

using llmux::testing::kChatStream;

// Streams shaped as vLLM's OpenAI server writes them.

const char* const kCompletionStream =
    R"(data: {"id":"cmpl-8f1c","object":"text_completion","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"text":" The","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})"
    "\n\n"
    R"(data: {"id":"cmpl-8f1c","object":"text_completion","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"text":" sky is","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null})"
    "\n\n"
    R"(data: {"id":"cmpl-8f1c","object":"text_completion","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[{"index":0,"text":" blue","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":null})"
    "\n\n"
    R"(data: {"id":"cmpl-8f1c","object":"text_completion","created":1745000000,"model":"Qwen3.6-35B-A3B","choices":[],"usage":{"prompt_tokens":12,"total_tokens":16,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":8}}})"
    "\n\n"
    "data: [DONE]\n\n";

const char* const kResponsesStream =
    "event: response.created\n"
    R"(data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_0a1b","object":"response","created_at":1745000000,"model":"Qwen3.6-35B-A3B","status":"in_progress","output":[],"usage":null}})"
    "\n\n"
    "event: response.in_progress\n"
    R"(data: {"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_0a1b","object":"response","status":"in_progress","output":[],"usage":null}})"
    "\n\n"
    "event: response.output_item.added\n"
    R"(data: {"type":"response.output_item.added","sequence_number":2,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","status":"in_progress","content":[]}})"
    "\n\n"
    "event: response.content_part.added\n"
    R"(data: {"type":"response.content_part.added","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":"","annotations":[]}})"
    "\n\n"
    "event: response.output_text.delta\n"
    R"(data: {"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" Hey","logprobs":[]})"
    "\n\n"
    "event: response.output_text.delta\n"
    R"(data: {"type":"response.output_text.delta","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"delta":" big sea","logprobs":[]})"
    "\n\n"
    "event: response.output_text.done\n"
    R"(data: {"type":"response.output_text.done","sequence_number":6,"item_id":"msg_1","output_index":0,"content_index":0,"text":" Hey big sea","logprobs":[]})"
    "\n\n"
    "event: response.content_part.done\n"
    R"(data: {"type":"response.content_part.done","sequence_number":7,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","text":" Hey big sea","annotations":[]}})"
    "\n\n"
    "event: response.output_item.done\n"
    R"(data: {"type":"response.output_item.done","sequence_number":8,"output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","status":"completed","content":[{"type":"output_text","text":" Hey big sea","annotations":[]}]}})"
    "\n\n"
    "event: response.completed\n"
    R"(data: {"type":"response.completed","sequence_number":9,"response":{"id":"resp_0a1b","object":"response","status":"completed","output":[{"type":"message","content":[{"type":"output_text","text":" Hey big sea"}]}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":4},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":12}}})"
    "\n\n";

struct Seen {
  std::string event;
  EventInfo info;
};

/// Runs a whole stream through the SSE parser (fed `step` bytes at a time) and the interpreter.
std::vector<Seen> run(StreamInterpreter& in, std::string_view stream, std::size_t step = 1) {
  SseParser p;
  std::vector<Seen> out;
  for (std::size_t i = 0; i < stream.size(); i += step) {
    p.feed(stream.substr(i, step), [&](const SseEvent& e) {
      out.push_back({std::string(e.event), in.on_event(e)});
    });
  }
  EXPECT_FALSE(p.mid_event());
  return out;
}

TEST(OpenAiStream, Completions) {
  StreamInterpreter in(Dialect::completions, /*capture_text=*/true);
  auto ev = run(in, kCompletionStream);
  ASSERT_EQ(ev.size(), 5u);
  EXPECT_TRUE(ev[0].info.content);
  EXPECT_EQ(ev[0].info.tokens, 1u);
  EXPECT_FALSE(ev[0].info.tokens_exact);
  EXPECT_FALSE(ev[0].info.usage);    // "usage": null is not usage
  EXPECT_EQ(ev[1].info.tokens, 2u);  // " sky is": a chunk with two tokens
  EXPECT_EQ(ev[2].info.tokens, 1u);
  // The usage chunk carries no tokens and is not content.
  EXPECT_TRUE(ev[3].info.usage);
  EXPECT_FALSE(ev[3].info.content);
  EXPECT_EQ(ev[3].info.tokens, 0u);
  EXPECT_TRUE(ev[4].info.done);
  EXPECT_FALSE(ev[3].info.done);

  EXPECT_TRUE(in.done());
  EXPECT_FALSE(in.error().has_value());
  EXPECT_EQ(in.tokens(), 4u);
  EXPECT_EQ(in.content_events(), 3u);
  EXPECT_EQ(in.usage().completion_tokens, 4u);
  EXPECT_EQ(in.usage().prompt_tokens, 12u);
  EXPECT_EQ(in.usage().cached_tokens, 8u);
  EXPECT_EQ(in.id(), "cmpl-8f1c");
  EXPECT_EQ(in.finish_reason(), "length");
  EXPECT_EQ(in.text(), " The sky is blue");
}

TEST(OpenAiStream, ChatRoleChunkIsNotContent) {
  StreamInterpreter in(Dialect::chat, true);
  auto ev = run(in, kChatStream, 7);
  ASSERT_EQ(ev.size(), 7u);
  EXPECT_FALSE(ev[0].info.content);  // {"role":"assistant","content":""}
  EXPECT_EQ(ev[0].info.tokens, 0u);
  EXPECT_TRUE(ev[1].info.content);  // reasoning_content counts
  EXPECT_EQ(ev[1].info.tokens, 1u);
  EXPECT_TRUE(ev[2].info.content);  // content with reasoning_content: null
  EXPECT_EQ(ev[2].info.tokens, 1u);
  // ' say "hi"' (escaped in JSON) -> " say", " ", '"', "hi", '"': unescaped before counting.
  EXPECT_EQ(ev[3].info.tokens, 5u);
  EXPECT_FALSE(ev[4].info.content);  // empty content with finish_reason
  EXPECT_TRUE(ev[5].info.usage);
  EXPECT_TRUE(ev[6].info.done);
  EXPECT_EQ(in.usage().completion_tokens, 7u);
  EXPECT_EQ(in.usage().prompt_tokens, 20u);
  EXPECT_FALSE(in.usage().cached_tokens.has_value());
  EXPECT_EQ(in.tokens(), 7u);
  EXPECT_EQ(in.finish_reason(), "stop");
  EXPECT_EQ(in.id(), "chatcmpl-77");
  EXPECT_EQ(in.text(), " Hmm Hi say \"hi\"");
}

TEST(OpenAiStream, ChatRoleOnlyWithoutContentAndToolCalls) {
  StreamInterpreter in(Dialect::chat);
  EventInfo role = in.on_event(
      "",
      R"({"id":"c","choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})");
  EXPECT_FALSE(role.content);
  EventInfo tool = in.on_event(
      "",
      R"({"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\":1}"}}]}}]})");
  EXPECT_TRUE(tool.content);
  EXPECT_GT(tool.tokens, 1u);
  EventInfo reasoning = in.on_event("", R"({"choices":[{"delta":{"reasoning":" hmm"}}]})");
  EXPECT_TRUE(reasoning.content);
  EXPECT_EQ(reasoning.tokens, 1u);
}

TEST(OpenAiStream, ContinuousUsageGivesExactTokens) {
  StreamInterpreter in(Dialect::chat);
  EventInfo e0 = in.on_event(
      "",
      R"({"id":"x","choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":{"prompt_tokens":5,"total_tokens":5,"completion_tokens":0}})");
  EXPECT_FALSE(e0.content);
  EXPECT_EQ(e0.tokens, 0u);
  EXPECT_TRUE(e0.tokens_exact);
  EXPECT_TRUE(e0.usage);
  // The text would be estimated as 3 tokens; the server says the chunk holds 2.
  EventInfo e1 = in.on_event(
      "",
      R"({"id":"x","choices":[{"index":0,"delta":{"content":" abcdefghijkl"}}],"usage":{"prompt_tokens":5,"total_tokens":7,"completion_tokens":2}})");
  EXPECT_TRUE(e1.content);
  EXPECT_TRUE(e1.tokens_exact);
  EXPECT_EQ(e1.tokens, 2u);
  EventInfo e2 = in.on_event(
      "",
      R"({"id":"x","choices":[{"index":0,"delta":{"content":" a"}}],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5}})");
  EXPECT_EQ(e2.tokens, 3u);
  EventInfo last = in.on_event(
      "",
      R"({"id":"x","choices":[],"usage":{"prompt_tokens":5,"total_tokens":10,"completion_tokens":5}})");
  EXPECT_TRUE(last.usage);
  EXPECT_EQ(last.tokens, 0u);
  EXPECT_FALSE(last.content);
  EXPECT_EQ(in.tokens(), 5u);
  EXPECT_EQ(in.usage().completion_tokens, 5u);
}

TEST(OpenAiStream, Responses) {
  StreamInterpreter in(Dialect::responses, true);
  auto ev = run(in, kResponsesStream, 3);
  ASSERT_EQ(ev.size(), 10u);
  std::size_t content = 0;
  for (std::size_t i = 0; i < ev.size(); ++i) {
    if (ev[i].info.content) ++content;
    EXPECT_FALSE(ev[i].info.error) << i;
    EXPECT_FALSE(ev[i].info.malformed) << i;
  }
  // Only the two deltas are content; the *.done events repeat the text and must not count.
  EXPECT_EQ(content, 2u);
  EXPECT_FALSE(ev[3].info.content);
  EXPECT_EQ(ev[4].info.tokens, 1u);
  EXPECT_EQ(ev[5].info.tokens, 2u);
  EXPECT_FALSE(ev[0].info.usage);  // "usage": null on response.created
  EXPECT_FALSE(ev[8].info.done);
  EXPECT_TRUE(ev[9].info.done);
  EXPECT_TRUE(ev[9].info.usage);
  EXPECT_TRUE(in.done());
  EXPECT_EQ(in.usage().completion_tokens, 3u);
  EXPECT_EQ(in.usage().prompt_tokens, 9u);
  EXPECT_EQ(in.usage().cached_tokens, 4u);
  EXPECT_EQ(in.id(), "resp_0a1b");
  EXPECT_EQ(in.finish_reason(), "completed");
  EXPECT_EQ(in.text(), " Hey big sea");
  EXPECT_EQ(in.tokens(), 3u);
}

TEST(OpenAiStream, ResponsesTypeFromEventLineWhenDataHasNone) {
  StreamInterpreter in(Dialect::responses);
  EventInfo e = in.on_event("response.output_text.delta", R"({"delta":" hi"})");
  EXPECT_TRUE(e.content);
  EXPECT_EQ(e.tokens, 1u);
  e = in.on_event("response.output_text.done", R"({"text":" hi"})");
  EXPECT_FALSE(e.content);
}

TEST(OpenAiStream, ChatErrorMidStream) {
  const std::string stream =
      std::string(
          R"(data: {"id":"chatcmpl-9","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" partial"}}]})") +
      "\n\n" +
      R"(data: {"error":{"message":"The engine died unexpectedly.","type":"InternalServerError","param":null,"code":500}})" +
      "\n\n" + "data: [DONE]\n\n";
  StreamInterpreter in(Dialect::chat);
  auto ev = run(in, stream);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_TRUE(ev[0].info.content);
  EXPECT_FALSE(ev[0].info.error);
  EXPECT_TRUE(ev[1].info.error);
  EXPECT_FALSE(ev[1].info.content);
  EXPECT_TRUE(ev[2].info.done);
  ASSERT_TRUE(in.error().has_value());
  EXPECT_EQ(in.error()->message, "The engine died unexpectedly.");
  EXPECT_EQ(in.error()->type, "InternalServerError");
  EXPECT_EQ(in.error()->code, "500");
  EXPECT_TRUE(in.done());
}

TEST(OpenAiStream, FlatLegacyErrorObject) {
  StreamInterpreter in(Dialect::completions);
  EventInfo e = in.on_event(
      "",
      R"({"object":"error","message":"bad things","type":"BadRequestError","param":null,"code":400})");
  EXPECT_TRUE(e.error);
  ASSERT_TRUE(in.error());
  EXPECT_EQ(in.error()->message, "bad things");
  EXPECT_EQ(in.error()->type, "BadRequestError");
  EXPECT_EQ(in.error()->code, "400");
  // A normal chunk with "object" other than error is not an error.
  StreamInterpreter ok(Dialect::completions);
  e = ok.on_event("", R"({"object":"text_completion","choices":[{"text":" a"}]})");
  EXPECT_FALSE(e.error);
  EXPECT_FALSE(ok.error().has_value());
}

TEST(OpenAiStream, ResponsesErrorAndFailed) {
  StreamInterpreter in(Dialect::responses);
  in.on_event("response.output_text.delta",
              R"({"type":"response.output_text.delta","delta":" a","sequence_number":4})");
  EventInfo e = in.on_event(
      "error",
      R"({"type":"error","code":"server_error","message":"overloaded","param":null,"sequence_number":5})");
  EXPECT_TRUE(e.error);
  EXPECT_FALSE(e.done);
  ASSERT_TRUE(in.error());
  EXPECT_EQ(in.error()->message, "overloaded");
  EXPECT_EQ(in.error()->code, "server_error");
  EXPECT_EQ(in.error()->type, "error");

  StreamInterpreter f(Dialect::responses);
  e = f.on_event(
      "response.failed",
      R"({"type":"response.failed","sequence_number":6,"response":{"id":"resp_9","status":"failed","error":{"code":"server_error","message":"The model failed"},"usage":null}})");
  EXPECT_TRUE(e.error);
  EXPECT_TRUE(e.done);
  ASSERT_TRUE(f.error());
  EXPECT_EQ(f.error()->message, "The model failed");
  EXPECT_EQ(f.error()->code, "server_error");
  EXPECT_EQ(f.id(), "resp_9");
  EXPECT_EQ(f.finish_reason(), "failed");

  // vLLM's generic error shape inside a Responses stream.
  StreamInterpreter g(Dialect::responses);
  e = g.on_event("", R"({"error":{"message":"boom","type":"InternalServerError","code":500}})");
  EXPECT_TRUE(e.error);
  ASSERT_TRUE(g.error());
  EXPECT_EQ(g.error()->code, "500");
}

TEST(OpenAiStream, MalformedData) {
  StreamInterpreter in(Dialect::chat);
  EventInfo e = in.on_event("", R"({"choices":[{"delta":{"content":" a"})");
  EXPECT_TRUE(e.malformed);
  EXPECT_FALSE(e.content);
  e = in.on_event("", "not json");
  EXPECT_TRUE(e.malformed);
  e = in.on_event("", "[1,2]");
  EXPECT_TRUE(e.malformed);
  EXPECT_EQ(in.tokens(), 0u);
  // The interpreter keeps working after a malformed event.
  e = in.on_event("", R"({"choices":[{"delta":{"content":" ok"}}]})");
  EXPECT_FALSE(e.malformed);
  EXPECT_TRUE(e.content);
}

TEST(OpenAiStream, ResetAndDialectNames) {
  StreamInterpreter in(Dialect::completions);
  in.on_event("", R"({"id":"cmpl-1","choices":[{"text":" a"}]})");
  in.on_event("", "[DONE]");
  EXPECT_TRUE(in.done());
  in.reset(Dialect::chat);
  EXPECT_FALSE(in.done());
  EXPECT_EQ(in.tokens(), 0u);
  EXPECT_TRUE(in.id().empty());
  EXPECT_EQ(in.dialect(), Dialect::chat);

  EXPECT_EQ(parse_dialect("responses"), Dialect::responses);
  EXPECT_FALSE(parse_dialect("embeddings").has_value());
  EXPECT_EQ(endpoint_path(Dialect::chat), "/v1/chat/completions");
  EXPECT_EQ(to_string(Dialect::completions), "completions");
}

TEST(OpenAiBody, NonStreamingBodies) {
  StreamInterpreter c(Dialect::completions, true);
  EventInfo e = c.on_body(
      R"({"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" one two","logprobs":null,"finish_reason":"length","stop_reason":null,"prompt_logprobs":null}],"usage":{"prompt_tokens":7,"total_tokens":135,"completion_tokens":128,"prompt_tokens_details":null}})");
  EXPECT_TRUE(e.done);
  EXPECT_TRUE(e.usage);
  EXPECT_TRUE(e.tokens_exact);
  EXPECT_EQ(e.tokens, 128u);  // usage, not the 2-token estimate of the text
  EXPECT_EQ(c.usage().completion_tokens, 128u);
  EXPECT_EQ(c.usage().prompt_tokens, 7u);
  EXPECT_FALSE(c.usage().cached_tokens.has_value());  // details: null
  EXPECT_EQ(c.text(), " one two");
  EXPECT_EQ(c.finish_reason(), "length");

  StreamInterpreter chat(Dialect::chat, true);
  e = chat.on_body(
      R"({"id":"chatcmpl-2","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":" ok then","reasoning_content":null,"tool_calls":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"total_tokens":14,"completion_tokens":3}})");
  EXPECT_EQ(e.tokens, 3u);
  EXPECT_EQ(chat.text(), " ok then");
  EXPECT_EQ(chat.id(), "chatcmpl-2");

  // Without usage the text is estimated, and the result says so.
  StreamInterpreter bare(Dialect::chat);
  e = bare.on_body(R"({"choices":[{"message":{"role":"assistant","content":" a b c"}}]})");
  EXPECT_FALSE(e.tokens_exact);
  EXPECT_EQ(e.tokens, 3u);
  EXPECT_FALSE(bare.usage().completion_tokens.has_value());

  StreamInterpreter r(Dialect::responses, true);
  e = r.on_body(
      R"({"id":"resp_7","object":"response","status":"completed","output":[{"id":"rs_1","type":"reasoning","content":[{"type":"reasoning_text","text":" hmm"}]},{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"output_text","text":" yes","annotations":[]}]}],"usage":{"input_tokens":9,"input_tokens_details":{"cached_tokens":2},"output_tokens":2,"total_tokens":11}})");
  EXPECT_TRUE(e.tokens_exact);
  EXPECT_EQ(e.tokens, 2u);
  EXPECT_EQ(r.usage().prompt_tokens, 9u);
  EXPECT_EQ(r.usage().cached_tokens, 2u);
  EXPECT_EQ(r.id(), "resp_7");
  EXPECT_EQ(r.text(), " hmm yes");
  EXPECT_EQ(r.finish_reason(), "completed");
  EXPECT_FALSE(r.error().has_value());
}

TEST(OpenAiBody, UsageOnlyReadsTheLastUsageObjectAndAgreesWithTheWholeBody) {
  // Each body read both ways: the usage must come out the same (the gateway's tap reads only
  // the usage object of chat and completions answers).
  const std::vector<std::string> bodies = {
      R"({"id":"cmpl-1","choices":[{"index":0,"text":" \"usage\": {\"prompt_tokens\": 99}","finish_reason":"length"}],"usage":{"prompt_tokens":7,"total_tokens":135,"completion_tokens":128,"prompt_tokens_details":null}})",
      R"({"id":"chatcmpl-2","choices":[{"message":{"role":"assistant","content":"","tool_calls":[{"function":{"name":"f","arguments":"{\"usage\":{\"prompt_tokens\":1}}"}}]}}],"usage" :
        {"prompt_tokens":11,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":8,"note":"}{\"x"}} })",
      R"({"usage":{"prompt_tokens":5,"completion_tokens":2},"choices":[]})",
      // A string in the usage ending in an escaped backslash (its quote closes it), then one
      // with an escaped quote and backslashes before it (it does not).
      R"({"choices":[],"usage":{"note":"a\\","prompt_tokens":6,"x":"\\\"}","completion_tokens":2}})",
      R"({"choices":[{"message":{"content":" a b c"}}],"usage":null})",
      R"({"error":{"message":"bad","type":"BadRequestError","code":400}})",
      R"({"choices":[],"usage":{"prompt_tokens":4,"completion_tokens":)",  // cut short
  };
  for (const auto& body : bodies) {
    StreamInterpreter whole(Dialect::chat), only(Dialect::chat);
    whole.on_body(body);
    const EventInfo e = only.on_body_usage(body);
    EXPECT_TRUE(e.done) << body;
    EXPECT_EQ(only.usage().prompt_tokens, whole.usage().prompt_tokens) << body;
    EXPECT_EQ(only.usage().completion_tokens, whole.usage().completion_tokens) << body;
    EXPECT_EQ(only.usage().cached_tokens, whole.usage().cached_tokens) << body;
  }
  StreamInterpreter c(Dialect::chat);
  c.on_body_usage(bodies[1]);
  EXPECT_EQ(c.usage().prompt_tokens, 11u) << "the top-level usage, not one inside a string";
  EXPECT_EQ(c.usage().cached_tokens, 8u);
}

TEST(OpenAiBody, PlainUsageObjectsAreReadWithoutTheParserAndAsItReadsThem) {
  // read_usage_flat (the hot path's reader of a non-streaming answer's usage) must set exactly
  // what parse_usage sets, and take the plain forms backends write; anything else is left to
  // parse_usage (false).
  namespace jr = llmux::openai::json_read;
  struct Case {
    std::string obj;
    bool plain;
  };
  const std::vector<Case> cases = {
      {R"({"prompt_tokens":4,"completion_tokens":1,"total_tokens":5})", true},
      {R"({"prompt_tokens":7,"total_tokens":135,"completion_tokens":128,"prompt_tokens_details":null})",
       true},
      {R"( { "input_tokens" : 12 , "output_tokens":3,"input_tokens_details":{"cached_tokens":8}})",
       true},
      {R"({"prompt_tokens":11,"prompt_tokens_details":{"cached_tokens":2,"audio_tokens":0},"completion_tokens_details":{"cached_tokens":9,"reasoning_tokens":0}})",
       true},
      {R"({"prompt_tokens":5,"prompt_tokens":null,"completion_tokens":2})", true},
      {R"({"prompt_tokens":5,"prompt_tokens":{},"completion_tokens":{"a":1}})", true},
      {R"({"prompt_tokens":18446744073709551615})", false},  // 20 digits: parse_usage's
      {R"({"prompt_tokens":9999999999999999999})", true},
      {R"({})", true},
      {R"({"prompt_tokens":1.5})", false},
      {R"({"prompt_tokens":-1})", false},
      {R"({"prompt_tokens":01})", false},
      {R"({"note":"x","prompt_tokens":6})", false},
      {R"({"prompt\u005ftokens":6})", false},  // an escape in a key
      {R"({"prompt_tokens":6,"d":{"e":{"f":1}}})", false},
      {R"({"prompt_tokens":6,})", false},
      {R"({"prompt_tokens":6} x)", false},
      {R"({"prompt_tokens":6)", false},
  };
  simdjson::ondemand::parser parser;
  for (const auto& c : cases) {
    StreamUsage fast;
    const bool read = jr::read_usage_flat(c.obj, fast);
    EXPECT_EQ(read, c.plain) << c.obj;
    if (!read) continue;
    simdjson::padded_string padded(c.obj);
    StreamUsage slow;
    simdjson::ondemand::document doc = parser.iterate(padded);
    simdjson::ondemand::value v = doc.get_value();
    jr::parse_usage(v, slow);
    EXPECT_EQ(fast.prompt_tokens, slow.prompt_tokens) << c.obj;
    EXPECT_EQ(fast.completion_tokens, slow.completion_tokens) << c.obj;
    EXPECT_EQ(fast.cached_tokens, slow.cached_tokens) << c.obj;
  }
  StreamUsage u;
  ASSERT_TRUE(jr::read_usage_flat(cases[4].obj, u));
  EXPECT_FALSE(u.prompt_tokens.has_value()) << "the last value of a key counts, null included";
  ASSERT_TRUE(jr::read_usage_flat(cases[3].obj, u));
  EXPECT_EQ(u.cached_tokens, 2u) << "the prompt's details, not the completion's";
}

TEST(OpenAiBody, ErrorBodies) {
  StreamInterpreter c(Dialect::chat);
  EventInfo e = c.on_body(
      R"({"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}})");
  EXPECT_TRUE(e.error);
  EXPECT_FALSE(e.content);
  ASSERT_TRUE(c.error());
  EXPECT_EQ(c.error()->code, "400");
  EXPECT_EQ(c.error()->type, "BadRequestError");

  StreamInterpreter r(Dialect::responses);
  e = r.on_body(
      R"({"error":{"message":"Response with id 'resp_x' not found.","type":"invalid_request_error","param":"response_id","code":404}})");
  EXPECT_TRUE(e.error);
  ASSERT_TRUE(r.error());
  EXPECT_EQ(r.error()->code, "404");
  EXPECT_EQ(r.error()->message, "Response with id 'resp_x' not found.");

  StreamInterpreter m(Dialect::completions);
  e = m.on_body("Internal Server Error");
  EXPECT_TRUE(e.malformed);
  EXPECT_TRUE(e.done);
}

}  // namespace
}  // namespace llmux::openai
