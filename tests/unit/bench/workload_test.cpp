// SPDX-License-Identifier: Apache-2.0
// Workloads (synthetic prompts, datasets, request bodies), the HTTP client's URL parsing, the
// driver's error classification and the commands' small parsers. No network.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <cmath>
#include <set>

#include "bench/commands.hpp"
#include "bench/driver.hpp"
#include "bench/workload.hpp"
#include "core/tokenizer.hpp"
#include "http/client.hpp"

namespace llmux::bench {
namespace {
namespace json = boost::json;

TEST(Workload, SyntheticPromptHasExactTokenCount) {
  for (std::size_t n : {1u, 7u, 256u, 3000u}) {
    EXPECT_EQ(Tokenizer::count(synthetic_prompt(n, 42)), n) << n;
  }
  EXPECT_EQ(synthetic_prompt(64, 1), synthetic_prompt(64, 1));
  EXPECT_NE(synthetic_prompt(64, 1), synthetic_prompt(64, 2));
}

TEST(Workload, OutputSpreadStaysInRange) {
  SyntheticSpec s;
  s.input_tokens = 16;
  s.output_tokens = 100;
  s.output_spread = 0.5;
  auto items = synthetic_workload(s, 200);
  ASSERT_EQ(items.size(), 200u);
  std::set<std::uint32_t> seen;
  for (const auto& p : items) {
    ASSERT_TRUE(p.max_tokens);
    EXPECT_GE(*p.max_tokens, 50u);
    EXPECT_LE(*p.max_tokens, 150u);
    seen.insert(*p.max_tokens);
    EXPECT_EQ(p.prompt_tokens, 16u);
  }
  EXPECT_GT(seen.size(), 10u);  // a spread, not one value
  s.output_spread = 0;
  for (const auto& p : synthetic_workload(s, 5)) EXPECT_EQ(p.max_tokens, 100u);
}

TEST(Workload, InputSpreadVariesPromptLengthsAndLeavesOutputLengthsAlone) {
  SyntheticSpec s;
  s.input_tokens = 200;
  s.output_tokens = 100;
  s.output_spread = 0.5;
  const auto plain = synthetic_workload(s, 100);
  s.input_spread = 0.9;
  const auto varied = synthetic_workload(s, 100);
  std::set<std::size_t> lengths;
  for (std::size_t i = 0; i < varied.size(); ++i) {
    const auto& p = varied[i];
    EXPECT_GE(p.prompt_tokens, 20u);
    EXPECT_LE(p.prompt_tokens, 380u);
    EXPECT_EQ(Tokenizer::count(p.text), p.prompt_tokens);
    EXPECT_EQ(p.max_tokens, plain[i].max_tokens) << "the output lengths do not move";
    lengths.insert(p.prompt_tokens);
  }
  EXPECT_GT(lengths.size(), 30u);
  // Seeded: the same spec gives the same workload.
  const auto again = synthetic_workload(s, 100);
  for (std::size_t i = 0; i < varied.size(); ++i) EXPECT_EQ(again[i].text, varied[i].text);
}

TEST(Workload, LengthsAreDrawnWithinTheBoundsBothIncluded) {
  const auto items = synthetic_workload(TokenRange{3, 5}, TokenRange{7, 9}, 11, 300);
  std::set<std::size_t> inputs, outputs;
  for (const PromptItem& item : items) {
    EXPECT_EQ(Tokenizer::count(item.text), item.prompt_tokens);
    inputs.insert(item.prompt_tokens);
    ASSERT_TRUE(item.max_tokens);
    outputs.insert(*item.max_tokens);
  }
  EXPECT_EQ(inputs, (std::set<std::size_t>{3, 4, 5}));
  EXPECT_EQ(outputs, (std::set<std::size_t>{7, 8, 9}));
}

TEST(Workload, TheSameSeedDrawsTheSamePromptsAndAnotherSeedOthers) {
  const TokenRange input{100, 4000}, output{20, 300};
  const auto first = synthetic_workload(input, output, 5, 40);
  const auto again = synthetic_workload(input, output, 5, 40);
  const auto other = synthetic_workload(input, output, 6, 40);
  std::size_t same_lengths = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].text, again[i].text) << i;
    EXPECT_EQ(first[i].max_tokens, again[i].max_tokens) << i;
    EXPECT_NE(first[i].text, other[i].text) << i;
    same_lengths += first[i].prompt_tokens == other[i].prompt_tokens;
  }
  EXPECT_LT(same_lengths, first.size() / 2);
}

/// A prompt's first `tokens` tokens (each " word" of the synthetic generator is one token).
std::string head(const std::string& text, std::size_t tokens) {
  std::size_t spaces = 0, end = 0;
  while (end < text.size() && spaces <= tokens) spaces += text[end++] == ' ';
  return text.substr(0, end);
}

TEST(Workload, EveryPromptDiffersFromTheOthersWithinItsFirstCacheBlock) {
  // A shared first block of 16 tokens would let a prefix cache serve part of a prompt.
  const auto items = synthetic_workload(TokenRange{5000, 6000}, TokenRange{1, 1}, 3, 200);
  std::set<std::string> heads;
  for (const PromptItem& item : items) heads.insert(head(item.text, 16));
  EXPECT_EQ(heads.size(), items.size());
}

TEST(Workload, DatasetPlainShareGptAndStrings) {
  const std::string jsonl =
      R"({"prompt": "hello there", "max_tokens": 7})"
      "\n\n"
      R"({"conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "why is the sky blue"}, {"from": "gpt", "value": "Rayleigh scattering of light"}]})"
      "\r\n"
      R"("just a string")"
      "\n"
      R"({"messages": [{"role": "user", "content": "hi"}]})";
  auto items = parse_dataset(jsonl);
  ASSERT_EQ(items.size(), 4u);
  EXPECT_EQ(items[0].text, "hello there");
  EXPECT_EQ(items[0].max_tokens, 7u);
  EXPECT_EQ(items[1].text, "why is the sky blue");
  ASSERT_EQ(items[1].messages.size(), 2u);
  EXPECT_EQ(items[1].messages[0].role, "system");
  EXPECT_EQ(items[1].messages[1].role, "user");
  EXPECT_EQ(items[1].max_tokens, Tokenizer::count("Rayleigh scattering of light"));
  EXPECT_EQ(items[2].text, "just a string");
  EXPECT_FALSE(items[2].max_tokens);
  EXPECT_EQ(items[3].text, "hi");
  EXPECT_EQ(parse_dataset(jsonl, 2).size(), 2u);
  EXPECT_THROW(parse_dataset("{\"nothing\": 1}"), std::runtime_error);
  EXPECT_THROW(parse_dataset("not json"), std::runtime_error);
}

TEST(Workload, BodiesOfTheThreeEndpoints) {
  PromptItem p;
  p.text = "hi";
  BodyOptions o;
  o.model = "m";
  o.max_tokens = 5;
  o.dialect = Dialect::completions;
  auto c = json::parse(build_body(p, o)).as_object();
  EXPECT_EQ(c.at("prompt").as_string(), "hi");
  EXPECT_EQ(c.at("max_tokens").as_int64(), 5);
  EXPECT_TRUE(c.at("stream").as_bool());
  EXPECT_TRUE(c.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(c.at("temperature").as_double(), 0.0);

  o.dialect = Dialect::chat;
  p.max_tokens = 9;
  auto ch = json::parse(build_body(p, o)).as_object();
  EXPECT_EQ(ch.at("messages").as_array().at(0).at("role").as_string(), "user");
  EXPECT_EQ(ch.at("max_tokens").as_int64(), 9);  // the prompt's own length wins

  o.dialect = Dialect::responses;
  o.stream = false;
  auto r = json::parse(build_body(p, o)).as_object();
  EXPECT_EQ(r.at("input").as_string(), "hi");
  EXPECT_EQ(r.at("max_output_tokens").as_int64(), 9);
  EXPECT_FALSE(r.contains("stream"));
  EXPECT_FALSE(r.contains("stream_options"));
}

TEST(Workload, SeedPromptsGrow) {
  EXPECT_LT(seed_prompt("short").size(), seed_prompt("medium").size());
  EXPECT_LT(seed_prompt("medium").size(), seed_prompt("long").size());
}

TEST(HttpUrl, Parses) {
  auto u = http::Url::parse("http://127.0.0.1:30000");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 30000);
  EXPECT_EQ(u->path, "");
  u = http::Url::parse("example.org/v1base/");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->port, 80);
  EXPECT_EQ(u->path, "/v1base");
  u = http::Url::parse("http://[::1]:8080");
  ASSERT_TRUE(u);
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->authority(), "[::1]:8080");
  std::string err;
  EXPECT_FALSE(http::Url::parse("https://x", &err));
  EXPECT_NE(err.find("https"), std::string::npos);
  EXPECT_FALSE(http::Url::parse("http://x:99999"));
  EXPECT_FALSE(http::Url::parse("http://:80"));
  EXPECT_EQ(http::parse_connection_mode("fresh"), http::ConnectionMode::fresh);
  EXPECT_EQ(http::parse_connection_mode("keep-alive"), http::ConnectionMode::keep_alive);
  EXPECT_FALSE(http::parse_connection_mode("sometimes"));
}

TEST(Classify, ErrorKinds) {
  StreamInterpreter interp(Dialect::chat);
  http::Response r;
  r.status = 200;
  r.complete = true;
  {
    RequestTiming t;
    classify(r, true, interp, false, t);  // no [DONE] seen
    EXPECT_EQ(t.error, ErrorKind::broken_stream);
  }
  interp.on_event(
      "", R"({"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}})");
  interp.on_event("", "[DONE]");
  {
    RequestTiming t;
    classify(r, true, interp, false, t);
    EXPECT_TRUE(t.ok());
    EXPECT_EQ(t.output_tokens, 4u);
    EXPECT_EQ(t.prompt_tokens, 3u);
  }
  {
    RequestTiming t;
    http::Response bad = r;
    bad.status = 503;
    classify(bad, false, interp, false, t);
    EXPECT_EQ(t.error, ErrorKind::http_status);
    EXPECT_EQ(t.http_status, 503);
  }
  for (auto [f, kind] : {std::pair{http::Failure::timeout, ErrorKind::timeout},
                         std::pair{http::Failure::connect, ErrorKind::connect},
                         std::pair{http::Failure::protocol, ErrorKind::malformed}}) {
    RequestTiming t;
    http::Response x = r;
    x.failure = f;
    classify(x, true, interp, false, t);
    EXPECT_EQ(t.error, kind);
  }
  {
    RequestTiming t;
    http::Response x = r;
    x.failure = http::Failure::closed;
    classify(x, true, interp, false, t);
    EXPECT_EQ(t.error, ErrorKind::broken_stream);
  }
  StreamInterpreter err(Dialect::completions);
  err.on_event(
      "", R"({"error":{"message":"boom","type":"InternalServerError","param":null,"code":500}})");
  err.on_event("", "[DONE]");
  RequestTiming t;
  classify(r, true, err, false, t);
  EXPECT_EQ(t.error, ErrorKind::error_event);
  EXPECT_EQ(t.error_message, "boom");
}

TEST(Commands, ParsersAndSpread) {
  EXPECT_EQ(parse_levels("4,8"), (std::vector<std::size_t>{4, 8}));
  EXPECT_EQ(parse_levels("1..16"), (std::vector<std::size_t>{1, 2, 4, 8, 16}));
  EXPECT_THROW(parse_levels("0"), std::invalid_argument);
  EXPECT_THROW(parse_levels("a"), std::invalid_argument);
  EXPECT_THROW(parse_levels(""), std::invalid_argument);
  EXPECT_EQ(parse_percentiles("99.9,p75"), (std::vector<double>{99.9, 75}));
  EXPECT_THROW(parse_percentiles("101"), std::invalid_argument);
  EXPECT_DOUBLE_EQ(spread({100, 98}), 0.02);
  EXPECT_DOUBLE_EQ(spread({5}), 0.0);
  auto paths = seed_paths(*http::Url::parse("http://a:1"), *http::Url::parse("http://b:2"));
  ASSERT_EQ(paths.size(), 4u);
  EXPECT_EQ(paths[0].name, "direct completions");
  EXPECT_EQ(paths[3].dialect, Dialect::chat);
}

}  // namespace
}  // namespace llmux::bench
