// SPDX-License-Identifier: Apache-2.0
// The workloads of `bench run --shared-prefix` and `--conversation-turns`: the system prompts, the
// request bodies of every endpoint and turn, and the figures reported for them (cached prompt
// tokens, not-found answers, conversations completed). No network.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/commands_internal.hpp"
#include "bench/conversation.hpp"
#include "bench/stats.hpp"
#include "bench/workload.hpp"
#include "core/tokenizer.hpp"

namespace llmux::bench {
namespace {
namespace json = boost::json;

json::object body_of(const std::string& s) {
  return json::parse(s).as_object();
}

// ---------------------------------------------------------------------------------------------
// Shared prefixes

TEST(SharedPrefix, DistinctSystemPromptsOfExactLengthDeterministicBySeed) {
  const auto a = shared_prefixes(4, 300, 7);
  ASSERT_EQ(a.size(), 4u);
  std::set<std::string> distinct(a.begin(), a.end());
  EXPECT_EQ(distinct.size(), 4u);
  for (const auto& p : a) EXPECT_EQ(Tokenizer::count(p), 300u);
  EXPECT_EQ(shared_prefixes(4, 300, 7), a);  // same seed, same prompts
  EXPECT_NE(shared_prefixes(4, 300, 8), a);
  // Not the questions' prompts of the same seed: a prefix must not repeat a question.
  SyntheticSpec s;
  s.input_tokens = 300;
  s.seed = 7;
  for (const auto& q : synthetic_workload(s, 16)) EXPECT_EQ(distinct.count(q.text), 0u);
}

TEST(SharedPrefix, RoundRobinOverRequestsOrOverConversations) {
  SyntheticSpec s;
  s.input_tokens = 10;
  auto items = synthetic_workload(s, 7);
  const std::vector<std::string> prefixes{" aa bb", " cc dd dd"};
  apply_shared_prefixes(items, prefixes);
  for (std::size_t i = 0; i < items.size(); ++i) {
    EXPECT_EQ(items[i].system, prefixes[i % 2]) << i;
    EXPECT_EQ(items[i].prompt_tokens, i % 2 ? 13u : 12u) << i;
  }
  // Conversations of 3 turns: each conversation keeps one prefix.
  auto turns = synthetic_workload(s, 9);
  apply_shared_prefixes(turns, prefixes, 3);
  const char* want[] = {" aa bb",    " aa bb", " aa bb", " cc dd dd", " cc dd dd",
                        " cc dd dd", " aa bb", " aa bb", " aa bb"};
  for (std::size_t i = 0; i < turns.size(); ++i) EXPECT_EQ(turns[i].system, want[i]) << i;
  auto none = synthetic_workload(s, 2);
  apply_shared_prefixes(none, {});
  EXPECT_TRUE(none[0].system.empty());
}

TEST(SharedPrefix, BodiesOfTheThreeEndpointsCarryTheSystemPrompt) {
  PromptItem p;
  p.system = " you are a terse assistant";
  p.text = " why is the sky blue";
  BodyOptions o;
  o.model = "m";
  o.max_tokens = 5;

  o.dialect = Dialect::chat;
  const auto ch = body_of(build_body(p, o));
  const auto& msgs = ch.at("messages").as_array();
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].at("role").as_string(), "system");
  EXPECT_EQ(msgs[0].at("content").as_string(), " you are a terse assistant");
  EXPECT_EQ(msgs[1].at("role").as_string(), "user");
  EXPECT_EQ(msgs[1].at("content").as_string(), " why is the sky blue");

  o.dialect = Dialect::completions;
  const auto c = body_of(build_body(p, o));
  EXPECT_EQ(c.at("prompt").as_string(), " you are a terse assistant why is the sky blue");
  p.text = "no leading space";
  EXPECT_EQ(body_of(build_body(p, o)).at("prompt").as_string(),
            " you are a terse assistant\n\nno leading space");
  p.text = " why is the sky blue";

  o.dialect = Dialect::responses;
  const auto r = body_of(build_body(p, o));
  EXPECT_EQ(r.at("instructions").as_string(), " you are a terse assistant");
  EXPECT_EQ(r.at("input").as_string(), " why is the sky blue");

  // No system prompt: no system message, no instructions.
  p.system.clear();
  EXPECT_FALSE(body_of(build_body(p, o)).contains("instructions"));
  o.dialect = Dialect::chat;
  EXPECT_EQ(body_of(build_body(p, o)).at("messages").as_array().size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Conversations

PromptItem user_msg(const std::string& text) {
  PromptItem p;
  p.text = text;
  return p;
}

BodyOptions responses_opts() {
  BodyOptions o;
  o.dialect = Dialect::responses;
  o.model = "m";
  o.max_tokens = 16;
  return o;
}

std::string item_text(const json::value& item) {
  return std::string(item.at("content").at(0).at("text").as_string());
}

TEST(Conversation, ModesParse) {
  EXPECT_EQ(parse_conversation_mode("previous"), ConversationMode::previous);
  EXPECT_EQ(parse_conversation_mode("replay"), ConversationMode::replay);
  EXPECT_FALSE(parse_conversation_mode("chain"));
  EXPECT_EQ(to_string(ConversationMode::replay), "replay");
}

TEST(Conversation, PreviousModeSendsOnlyTheNewMessageChainedToTheLastSuccess) {
  Conversation c;
  c.key = "conv-1-0";
  c.system = " be brief";
  const BodyOptions o = responses_opts();

  const auto t1 = body_of(build_turn_body(c, user_msg(" first"), ConversationMode::previous, o));
  EXPECT_TRUE(t1.at("store").as_bool());
  EXPECT_FALSE(t1.contains("previous_response_id"));
  EXPECT_EQ(t1.at("instructions").as_string(), " be brief");
  ASSERT_EQ(t1.at("input").as_array().size(), 1u);
  EXPECT_EQ(t1.at("input").at(0).at("role").as_string(), "user");
  EXPECT_EQ(item_text(t1.at("input").at(0)), " first");
  EXPECT_EQ(t1.at("max_output_tokens").as_int64(), 16);
  EXPECT_TRUE(t1.at("stream").as_bool());
  EXPECT_FALSE(t1.contains("prompt_cache_key"));

  finish_turn(c, user_msg(" first"), true, "resp_1", "");
  const auto t2 = body_of(build_turn_body(c, user_msg(" second"), ConversationMode::previous, o));
  EXPECT_EQ(t2.at("previous_response_id").as_string(), "resp_1");
  ASSERT_EQ(t2.at("input").as_array().size(), 1u);  // only the new message
  EXPECT_EQ(item_text(t2.at("input").at(0)), " second");
  EXPECT_FALSE(t2.contains("instructions"));  // the server kept the first turn's

  // A failed turn changes nothing: the next one chains to the last success.
  finish_turn(c, user_msg(" second"), false, "", "");
  const auto t3 = body_of(build_turn_body(c, user_msg(" third"), ConversationMode::previous, o));
  EXPECT_EQ(t3.at("previous_response_id").as_string(), "resp_1");
  finish_turn(c, user_msg(" third"), true, "resp_3", "");
  const auto t4 = body_of(build_turn_body(c, user_msg(" fourth"), ConversationMode::previous, o));
  EXPECT_EQ(t4.at("previous_response_id").as_string(), "resp_3");
}

TEST(Conversation, ReplayModeSendsTheWholeHistoryWithACacheKey) {
  Conversation c;
  c.key = "conv-3-2";
  c.system = " be brief";
  const BodyOptions o = responses_opts();

  const auto t1 = body_of(build_turn_body(c, user_msg(" first"), ConversationMode::replay, o));
  EXPECT_FALSE(t1.at("store").as_bool());
  EXPECT_FALSE(t1.contains("previous_response_id"));
  EXPECT_EQ(t1.at("prompt_cache_key").as_string(), "conv-3-2");
  EXPECT_EQ(t1.at("input").as_array().size(), 1u);

  finish_turn(c, user_msg(" first"), true, "resp_1", " the reply");
  finish_turn(c, user_msg(" lost"), false, "", "");  // not part of the history
  const auto t2 = body_of(build_turn_body(c, user_msg(" second"), ConversationMode::replay, o));
  const auto& in = t2.at("input").as_array();
  ASSERT_EQ(in.size(), 3u);
  EXPECT_EQ(in[0].at("role").as_string(), "user");
  EXPECT_EQ(in[0].at("content").at(0).at("type").as_string(), "input_text");
  EXPECT_EQ(item_text(in[0]), " first");
  EXPECT_EQ(in[1].at("role").as_string(), "assistant");
  EXPECT_EQ(in[1].at("content").at(0).at("type").as_string(), "output_text");
  EXPECT_EQ(item_text(in[1]), " the reply");
  EXPECT_EQ(item_text(in[2]), " second");
  EXPECT_EQ(t2.at("instructions").as_string(), " be brief");  // every turn carries it
  EXPECT_FALSE(t2.contains("previous_response_id"));
  EXPECT_EQ(t2.at("prompt_cache_key").as_string(), "conv-3-2");
}

TEST(Conversation, StandInReplyHasTheReplysLength) {
  EXPECT_EQ(Tokenizer::count(stand_in_reply(37, 5)), 37u);
  EXPECT_EQ(stand_in_reply(37, 5), stand_in_reply(37, 5));
}

// ---------------------------------------------------------------------------------------------
// Figures

RequestTiming ok_timing(std::uint64_t prompt, std::optional<std::uint64_t> cached) {
  RequestTiming t;
  t.start_ns = 0;
  t.end_ns = 1'000'000;
  t.output_tokens = 4;
  t.prompt_tokens = prompt;
  t.cached_tokens = cached;
  return t;
}

RequestTiming failed(int status, const std::string& message) {
  RequestTiming t;
  t.end_ns = 1'000;
  t.error = ErrorKind::http_status;
  t.http_status = status;
  t.error_message = message;
  return t;
}

TEST(Figures, CachedPromptTokensAndNotFound) {
  std::vector<RequestTiming> ts{ok_timing(100, 60),
                                ok_timing(100, 0),
                                ok_timing(200, 40),
                                failed(404, "HTTP 404: Response with id 'resp_x' not found."),
                                failed(404, "HTTP 404: The model `x` does not exist."),
                                failed(500, "HTTP 500: not found anywhere")};
  const Aggregate a = aggregate(ts);
  EXPECT_EQ(a.cached_tokens, 100u);
  EXPECT_EQ(a.cached_reported, 3u);
  EXPECT_DOUBLE_EQ(a.cached_share, 0.25);
  EXPECT_EQ(a.not_found, 1u);  // only the 404 that says "not found"
  const json::object j = to_json(a);
  EXPECT_EQ(j.at("cached_prompt_tokens").as_uint64(), 100u);
  EXPECT_DOUBLE_EQ(j.at("cached_share").as_double(), 0.25);
  EXPECT_EQ(j.at("not_found").as_uint64(), 1u);

  // A server that reports no cached tokens: the share is unknown, not 0.
  const Aggregate none = aggregate(std::vector<RequestTiming>{ok_timing(100, std::nullopt)});
  EXPECT_EQ(none.cached_tokens, 0u);
  EXPECT_TRUE(std::isnan(none.cached_share));
  EXPECT_TRUE(to_json(none).at("cached_share").is_null());
}

Record turn_record(std::size_t user, std::size_t turn, RequestTiming t, bool warmup = false) {
  Record r;
  r.user = user;
  r.turn = turn;
  r.session = "conv-1-" + std::to_string(user);
  r.t = std::move(t);
  r.warmup = warmup;
  return r;
}

TEST(Figures, ConversationsCompletedTurnsAndNotFound) {
  RunResult run;
  // User 0: three turns, all fine (the first a warm-up). User 1: turn 2 not found. User 2 sent
  // only two of its three turns (the run's duration ended).
  run.records = {turn_record(0, 1, ok_timing(10, 0), true),
                 turn_record(1, 1, ok_timing(10, 0)),
                 turn_record(2, 1, ok_timing(10, 0)),
                 turn_record(0, 2, ok_timing(30, 16)),
                 turn_record(1, 2, failed(404, "HTTP 404: Response with id 'r' not found.")),
                 turn_record(2, 2, ok_timing(30, 16)),
                 turn_record(0, 3, ok_timing(50, 32)),
                 turn_record(1, 3, ok_timing(50, 32))};
  const auto s = detail::conversation_stats(run, 3);
  EXPECT_EQ(s.users, 3u);
  EXPECT_EQ(s.turns_sent, 7u);  // the warm-up turn is not measured
  EXPECT_EQ(s.turns_ok, 6u);
  EXPECT_EQ(s.not_found, 1u);
  EXPECT_EQ(s.completed, 1u);
  const json::object j = detail::to_json(s);
  EXPECT_EQ(j.at("turns_completed").as_uint64(), 6u);
  EXPECT_EQ(j.at("conversations_completed").as_uint64(), 1u);
  EXPECT_EQ(j.at("not_found").as_uint64(), 1u);
}

TEST(Figures, BackendTableHasCachedPromptTokensAndNotFound) {
  RunCommand c;
  c.run.conversation.turns = 2;
  detail::LevelResult l;
  l.label = "c2";
  l.run.wall_s = 1;
  auto with_backend = [](Record r, const char* b) {
    r.t.backend = b;
    return r;
  };
  l.run.records = {
      with_backend(turn_record(0, 1, ok_timing(100, 0)), "server1"),
      with_backend(turn_record(0, 2, ok_timing(300, 96)), "server1"),
      with_backend(turn_record(1, 1, ok_timing(100, 0)), "server2"),
      with_backend(turn_record(1, 2, failed(404, "HTTP 404: x not found.")), "server2")};
  const auto t = detail::backend_table(c, {l});
  ASSERT_TRUE(t);
  const auto& h = t->headers();
  auto col = [&](const std::string& name) {
    return static_cast<std::size_t>(std::find(h.begin(), h.end(), name) - h.begin());
  };
  ASSERT_LT(col("Cached prompt tokens"), h.size());
  ASSERT_LT(col("Cached %"), h.size());
  ASSERT_LT(col("Not found"), h.size());
  ASSERT_EQ(t->rows().size(), 2u);
  const auto& s1 = t->rows()[0];
  EXPECT_EQ(s1[col("Backend")], "server1");
  EXPECT_EQ(s1[col("Prompt tokens")], "400");
  EXPECT_EQ(s1[col("Cached prompt tokens")], "96");
  EXPECT_EQ(s1[col("Cached %")], "24.0");
  EXPECT_EQ(s1[col("Not found")], "0");
  EXPECT_EQ(t->rows()[1][col("Not found")], "1");
}

}  // namespace
}  // namespace llmux::bench
