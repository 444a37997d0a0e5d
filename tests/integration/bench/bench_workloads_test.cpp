// SPDX-License-Identifier: Apache-2.0
// `llmux bench run`'s conversation, shared-prefix and mix workloads end to end against `llmux sim`
// processes on port 0: multi-turn /v1/responses conversations (previous_response_id chains and
// replayed histories), shared system prompts, classes of long and short prompts at once (--mix),
// and the figures reported for them (cached prompt tokens, not-found answers, conversations
// completed, per backend, per class).
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {
namespace json = boost::json;

std::string url(const SimServer& s) {
  return "http://127.0.0.1:" + std::to_string(s.port());
}

RunResult bench(std::vector<std::string> args,
                std::chrono::seconds timeout = std::chrono::seconds(60)) {
  args.insert(args.begin(), {llmux_binary(), "bench"});
  return run_to_completion(args, timeout);
}

const json::object& level0(const json::value& doc) {
  return doc.at("levels").as_array().at(0).as_object();
}

std::int64_t num(const json::value& v) {
  return v.to_number<std::int64_t>();
}

// A run's requests by user, each user's in turn order.
std::map<std::int64_t, std::vector<json::object>> turns_by_user(const json::object& level) {
  std::map<std::int64_t, std::vector<json::object>> out;
  for (const auto& q : level.at("requests").as_array()) {
    const auto& o = q.as_object();
    out[num(o.at("user"))].push_back(o);
  }
  for (auto& [user, turns] : out)
    std::sort(turns.begin(), turns.end(), [](const json::object& a, const json::object& b) {
      return num(a.at("turn")) < num(b.at("turn"));
    });
  return out;
}

std::vector<std::string> conversation_args(const SimServer& sim, const std::string& mode,
                                           const std::string& out) {
  return {"run",
          "--url",
          url(sim),
          "--endpoint",
          "responses",
          "--concurrency",
          "3",
          "--conversation-turns",
          "4",
          "--conversation-mode",
          mode,
          "--input-len",
          "40",
          "--output-len",
          "12",
          "--ignore-eos",
          "--out",
          out,
          "--no-progress"};
}

TEST(BenchConversation, PreviousModeChainsEveryTurnOnTheServer) {
  SimServer sim({"--time-scale", "20"});
  TempDir out;
  RunResult r = bench(conversation_args(sim, "previous", out.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("#### Conversations"), std::string::npos) << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& lv = level0(doc);
  EXPECT_EQ(num(lv.at("aggregate").at("ok")), 12);
  EXPECT_EQ(num(lv.at("aggregate").at("failed")), 0);
  const auto& conv = doc.at("summary").at("c3").at("conversation").as_object();
  EXPECT_EQ(num(conv.at("users")), 3);
  EXPECT_EQ(num(conv.at("turns_completed")), 12);
  EXPECT_EQ(num(conv.at("conversations_completed")), 3);
  EXPECT_EQ(num(conv.at("not_found")), 0);
  EXPECT_EQ(num(doc.at("summary").at("c3").at("not_found")), 0);

  const auto users = turns_by_user(lv);
  ASSERT_EQ(users.size(), 3u);
  for (const auto& [user, turns] : users) {
    ASSERT_EQ(turns.size(), 4u) << "user " << user;
    for (std::size_t k = 0; k < turns.size(); ++k) {
      EXPECT_EQ(num(turns[k].at("turn")), static_cast<std::int64_t>(k + 1));
      EXPECT_EQ(turns[k].at("session").as_string(), "conv-1-" + std::to_string(user));
      if (k == 0) continue;
      // One after the other, and the server prepended the history it kept: the previous
      // turn's prompt and its reply.
      EXPECT_GE(num(turns[k].at("start_ns")), num(turns[k - 1].at("end_ns")));
      EXPECT_GT(num(turns[k].at("prompt_tokens")),
                num(turns[k - 1].at("prompt_tokens")) + num(turns[k - 1].at("output_tokens")))
          << "user " << user << " turn " << k + 1;
    }
  }
}

TEST(BenchConversation, NotFoundAnswersAreCounted) {
  // A store of one response: the users' chains break, and the 404s must show.
  SimServer sim({"--time-scale", "20", "--response-store-max", "1"});
  TempDir out;
  RunResult r = bench(conversation_args(sim, "previous", out.path()));
  // Turns answered 404 failed: the run fails (exit status 1) and says so.
  ASSERT_EQ(r.exit_code, 1) << r.err << r.out;
  EXPECT_NE(r.out.find("Result: FAILED"), std::string::npos) << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& conv = doc.at("summary").at("c3").at("conversation").as_object();
  EXPECT_GT(num(conv.at("not_found")), 0) << r.out;
  EXPECT_EQ(num(conv.at("not_found")), num(doc.at("summary").at("c3").at("not_found")));
  EXPECT_EQ(num(conv.at("turns_completed")) + num(conv.at("not_found")), 12);
  EXPECT_LT(num(conv.at("conversations_completed")), 3);
}

TEST(BenchConversation, ReplayModeSendsTheHistoryAndHitsThePrefixCache) {
  SimServer sim({"--time-scale", "20", "--enable-prompt-tokens-details"});
  TempDir out;
  RunResult r = bench(conversation_args(sim, "replay", out.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& lv = level0(doc);
  EXPECT_EQ(num(lv.at("aggregate").at("failed")), 0);
  const auto& conv = doc.at("summary").at("c3").at("conversation").as_object();
  EXPECT_EQ(num(conv.at("conversations_completed")), 3);
  EXPECT_GT(num(doc.at("summary").at("c3").at("cached_prompt_tokens")), 0);
  EXPECT_GT(doc.at("summary").at("c3").at("cached_share").to_number<double>(), 0);
  for (const auto& [user, turns] : turns_by_user(lv)) {
    ASSERT_EQ(turns.size(), 4u);
    for (std::size_t k = 1; k < turns.size(); ++k) {
      EXPECT_GT(num(turns[k].at("cached_tokens")), 0) << "user " << user << " turn " << k + 1;
      // The whole history, replies included, was sent again.
      EXPECT_GT(num(turns[k].at("prompt_tokens")),
                num(turns[k - 1].at("prompt_tokens")) + num(turns[k - 1].at("output_tokens")))
          << "user " << user << " turn " << k + 1;
    }
  }
}

TEST(BenchSharedPrefix, SharedSystemPromptsHitTheCacheOnEveryBackend) {
  SimServer a({"--time-scale", "20", "--enable-prompt-tokens-details"});
  SimServer b({"--time-scale", "20", "--enable-prompt-tokens-details"});
  auto run = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args{"run",         "--split",     url(a) + "=2", "--split",
                                  url(b) + "=2", "--endpoint",  "chat",        "--num-requests",
                                  "24",          "--input-len", "24",          "--output-len",
                                  "4",           "--out",       out,           "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return bench(args);
  };
  // Without shared prompts the questions are distinct: nothing to reuse.
  TempDir plain;
  RunResult p = run({"--seed", "2"}, plain.path());
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  const json::value pdoc = parse_json(read_text_file(plain.path() + "/run.json"));
  EXPECT_EQ(num(pdoc.at("summary").at("c4").at("cached_prompt_tokens")), 0);

  TempDir out;
  RunResult r = run({"--seed", "3", "--shared-prefix", "2", "--prefix-len", "160"}, out.path());
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("2 shared system prompts of 160 tokens"), std::string::npos) << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& sum = doc.at("summary").at("c4").as_object();
  EXPECT_EQ(num(sum.at("ok")), 24);
  EXPECT_GT(num(sum.at("cached_prompt_tokens")), 0);
  EXPECT_GT(sum.at("cached_share").to_number<double>(), 0.3) << r.out;
  EXPECT_EQ(num(doc.at("settings").at("shared_prefixes")), 2);
  // Per backend: each machine served both prompts and reused them.
  std::map<std::string, std::int64_t> cached;
  for (const auto& q : level0(doc).at("requests").as_array()) {
    // null: no cache hit (vLLM 0.11 then reports no prompt_tokens_details).
    const auto& c = q.at("cached_tokens");
    cached[std::string(q.at("backend").as_string())] += c.is_null() ? 0 : num(c);
  }
  ASSERT_EQ(cached.size(), 2u);
  for (const auto& [backend, n] : cached) EXPECT_GT(n, 0) << backend;
  EXPECT_NE(r.out.find("| Cached prompt tokens"), std::string::npos) << r.out;
  // CSV cells stay plain numbers.
  const std::string csv = read_text_file(out.path() + "/summary.csv");
  EXPECT_NE(csv.find("cached_prompt_tokens,cached_pct"), std::string::npos) << csv;
  EXPECT_EQ(csv.find('%', csv.find('\n')), std::string::npos) << csv;
}

TEST(BenchSharedPrefix, AServerThatReportsNoCachedTokensIsSaidSo) {
  SimServer sim({"--time-scale", "20"});  // no --enable-prompt-tokens-details
  TempDir out;
  RunResult r = bench({"run", "--url", url(sim), "--endpoint", "chat", "--concurrency", "2",
                       "--num-requests", "8", "--shared-prefix", "1", "--prefix-len", "64",
                       "--output-len", "4", "--out", out.path(), "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& sum = doc.at("summary").at("c2").as_object();
  EXPECT_EQ(num(sum.at("cached_reported_requests")), 0);
  EXPECT_TRUE(sum.at("cached_share").is_null());
  EXPECT_NE(r.out.find("--enable-prompt-tokens-details"), std::string::npos) << r.out;
}

TEST(BenchWorkload, ARunBoundedByDurationSendsDistinctPrompts) {
  // Without --num-requests the workload once had a single prompt, so every request was the same
  // (and, with prefix caching, served from the cache).
  SimServer sim({"--time-scale", "20", "--enable-prompt-tokens-details"});
  TempDir out;
  RunResult r = bench({"run", "--url", url(sim), "--endpoint", "chat", "--concurrency", "2",
                       "--duration", "0.5", "--input-len", "64", "--input-spread", "0.5",
                       "--output-len", "4", "--out", out.path(), "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  std::set<std::int64_t> prompts, lengths;
  for (const auto& q : level0(doc).at("requests").as_array()) {
    prompts.insert(num(q.at("prompt")));
    lengths.insert(num(q.at("prompt_tokens")));
  }
  ASSERT_GT(level0(doc).at("requests").as_array().size(), 4u);
  EXPECT_EQ(prompts.size(), level0(doc).at("requests").as_array().size());
  EXPECT_GT(lengths.size(), 2u);
}

// Classes of the mix below: long prompts beside short ones, bounds far apart.
constexpr std::int64_t kLongMin = 3000, kLongMax = 6000, kLongOutMin = 20, kLongOutMax = 40;
constexpr std::int64_t kShortMin = 20, kShortMax = 60, kShortOutMin = 10, kShortOutMax = 20;

json::value run_mix(const std::string& endpoint, const TempDir& out, std::string* report) {
  SimServer sim({"--time-scale", "50"});
  RunResult r = bench(
      {"run", "--url", url(sim), "--endpoint", endpoint, "--mix",
       fmt::format("long:2:{}-{}/{}-{}", kLongMin, kLongMax, kLongOutMin, kLongOutMax), "--mix",
       fmt::format("short:3:{}-{}/{}-{}", kShortMin, kShortMax, kShortOutMin, kShortOutMax),
       "--duration", "1", "--ignore-eos", "--out", out.path(), "--no-progress"});
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  if (report) *report = r.out;
  return parse_json(read_text_file(out.path() + "/run.json"));
}

TEST(BenchMix, LongPromptsAreLongAndEachClassHasItsRow) {
  TempDir out;
  std::string report;
  const json::value doc = run_mix("completions", out, &report);
  // Every request is its class's: the prompt the server counted (usage) and the output it was
  // asked for, within the class's bounds.
  std::map<std::string, std::int64_t> requests;
  for (const auto& q : level0(doc).at("requests").as_array()) {
    const auto& o = q.as_object();
    const std::string group(o.at("group").as_string());
    ASSERT_TRUE(group == "long" || group == "short") << group;
    ASSERT_EQ(o.at("error").as_string(), "none") << json::serialize(o);
    const bool is_long = group == "long";
    const std::int64_t prompt = num(o.at("prompt_tokens")), output = num(o.at("output_tokens"));
    EXPECT_GE(prompt, is_long ? kLongMin : kShortMin) << group;
    EXPECT_LE(prompt, is_long ? kLongMax : kShortMax) << group;
    EXPECT_GE(output, is_long ? kLongOutMin : kShortOutMin) << group;
    EXPECT_LE(output, is_long ? kLongOutMax : kShortOutMax) << group;
    ++requests[group];
  }
  EXPECT_GT(requests["long"], 2);
  EXPECT_GT(requests["short"], requests["long"]);
  // The per-class rows: Markdown, and run.json's "mix" with the classes' own counts.
  EXPECT_NE(report.find("#### Workload mix"), std::string::npos) << report;
  EXPECT_NE(report.find(fmt::format("| long ")), std::string::npos) << report;
  EXPECT_NE(report.find("All classes"), std::string::npos) << report;
  const auto& classes = doc.at("mix").at("classes").as_array();
  ASSERT_EQ(classes.size(), 2u);
  for (const auto& row : classes) {
    const std::string name(row.at("name").as_string());
    EXPECT_EQ(num(row.at("ok")), requests[name]) << name;
    EXPECT_GT(row.at("itl_p99_s").as_double(), 0) << name;
    EXPECT_GT(row.at("ttft_p50_s").as_double(), 0) << name;
  }
  EXPECT_GT(classes[0].at("prompt_tokens_mean").as_double(),
            classes[1].at("prompt_tokens_mean").as_double());
  EXPECT_EQ(num(doc.at("mix").at("all").at("ok")), requests["long"] + requests["short"]);
  // No prompt sent twice: each request drew one of its own.
  std::set<std::pair<std::string, std::int64_t>> prompts;
  for (const auto& q : level0(doc).at("requests").as_array())
    prompts.insert({std::string(q.at("group").as_string()), num(q.at("prompt"))});
  EXPECT_EQ(prompts.size(), level0(doc).at("requests").as_array().size());
}

TEST(BenchMix, EveryEndpointSendsEachClassItsOwnLengths) {
  // Chat, Responses and Messages wrap the prompt in a template: its tokens come on top, so a
  // class's prompts are at least its minimum and the long ones above every short one.
  for (const std::string endpoint : {"chat", "responses", "messages"}) {
    TempDir out;
    const json::value doc = run_mix(endpoint, out, nullptr);
    std::int64_t longest_short = 0, shortest_long = std::numeric_limits<std::int64_t>::max();
    std::map<std::string, std::int64_t> requests;
    for (const auto& q : level0(doc).at("requests").as_array()) {
      const std::string group(q.at("group").as_string());
      ASSERT_EQ(q.at("error").as_string(), "none") << endpoint << json::serialize(q);
      const std::int64_t prompt = num(q.at("prompt_tokens"));
      EXPECT_GE(prompt, group == "long" ? kLongMin : kShortMin) << endpoint << group;
      EXPECT_LE(num(q.at("output_tokens")), group == "long" ? kLongOutMax : kShortOutMax)
          << endpoint << group;
      if (group == "long")
        shortest_long = std::min(shortest_long, prompt);
      else
        longest_short = std::max(longest_short, prompt);
      ++requests[group];
    }
    EXPECT_GT(requests["long"], 0) << endpoint;
    EXPECT_GT(requests["short"], 0) << endpoint;
    EXPECT_GT(shortest_long, longest_short) << endpoint;
    EXPECT_EQ(doc.at("mix").at("classes").as_array().size(), 2u) << endpoint;
  }
}

TEST(BenchMix, OptionsAreChecked) {
  RunResult rate = bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--mix",
                          "a:1:10/10", "--request-rate", "5"});
  EXPECT_NE(rate.exit_code, 0);
  EXPECT_NE(rate.err.find("--request-rate"), std::string::npos) << rate.err;
  RunResult twice = bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--mix",
                           "a:1:10/10", "--tenant", "a:1"});
  EXPECT_NE(twice.exit_code, 0);
  EXPECT_NE(twice.err.find("'a' names two client groups"), std::string::npos) << twice.err;
  RunResult unknown =
      bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--workload", "no-such-mix"});
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("agent-mix"), std::string::npos) << unknown.err;
}

TEST(BenchConversation, OptionsAreChecked) {
  RunResult chat = bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--endpoint",
                          "chat", "--conversation-turns", "2"});
  EXPECT_NE(chat.exit_code, 0);
  EXPECT_NE(chat.err.find("--endpoint responses"), std::string::npos) << chat.err;
  RunResult open = bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--endpoint",
                          "responses", "--conversation-turns", "2", "--request-rate", "5"});
  EXPECT_NE(open.exit_code, 0);
  EXPECT_NE(open.err.find("--request-rate"), std::string::npos) << open.err;
  RunResult mode = bench({"run", "--url", "http://127.0.0.1:1", "--model", "m", "--endpoint",
                          "responses", "--conversation-mode", "replay"});
  EXPECT_NE(mode.exit_code, 0);
  EXPECT_NE((mode.err + mode.out).find("--conversation-turns"), std::string::npos)
      << mode.err << mode.out;
}

}  // namespace
}  // namespace llmux::test
