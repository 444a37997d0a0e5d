// SPDX-License-Identifier: Apache-2.0
// `bench run --mix` and `--workload agent-mix`: the flag's forms and errors, each class's prompts
// within its bounds and apart from the others' (no first cache block in common), and per-class
// figures taken from the class's own requests (its ITL: the stall of its decode streams). The
// draws themselves: workload_test.cpp.
#include "bench/mix.hpp"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "bench/tenants.hpp"
#include "core/tokenizer.hpp"

namespace llmux::bench {
namespace {

TEST(BenchMix, ParsesNameClientsAndBounds) {
  const ClientGroup agent = parse_mix("agent:4:5000-60000/200-2000");
  EXPECT_EQ(agent.kind, ClientGroup::Kind::mix);
  EXPECT_EQ(agent.name, "agent");
  EXPECT_EQ(agent.clients, 4u);
  EXPECT_EQ(agent.input, (TokenRange{5000, 60000}));
  EXPECT_EQ(agent.output, (TokenRange{200, 2000}));
  EXPECT_TRUE(agent.priority.empty());
  const ClientGroup fixed = parse_mix("chat:16:128/64");
  EXPECT_EQ(fixed.input, (TokenRange{128, 128}));
  EXPECT_EQ(fixed.output, (TokenRange{64, 64}));
}

TEST(BenchMix, BadFormsAreErrorsSayingWhat) {
  for (const char* text :
       {"agent", "agent:4", "agent:0:1/1", ":4:1/1", "a:x:1/1", "a:4:100", "a:4:60000-5000/1",
        "a:4:1-/5", "a:4:-5/5", "a:4:x-5/5", "a:4:5/0", "a:4:5/3-1", "a:4:1/2:x"}) {
    try {
      parse_mix(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("--mix"), std::string::npos) << error.what();
    }
  }
}

TEST(BenchMix, AgentMixIsLongAgentPromptsBesideShortChats) {
  const std::vector<ClientGroup> classes = workload_classes("agent-mix");
  ASSERT_EQ(classes.size(), 2u);
  EXPECT_EQ(classes[0].name, "agent");
  EXPECT_EQ(classes[0].input, (TokenRange{5000, 60000}));  // issue 40's agent prompts
  EXPECT_EQ(classes[0].output, (TokenRange{200, 2000}));
  EXPECT_EQ(classes[1].name, "chat");
  EXPECT_LT(classes[1].input.max, classes[0].input.min);
  for (const ClientGroup& mix_class : classes) EXPECT_EQ(mix_class.kind, ClientGroup::Kind::mix);
  try {
    workload_classes("agent-mixx");
    ADD_FAILURE() << "an unknown workload was accepted";
  } catch (const std::invalid_argument& error) {
    EXPECT_NE(std::string(error.what()).find("agent-mix"), std::string::npos) << error.what();
  }
}

TEST(BenchMix, TwoGroupsOfOneNameAreAnError) {
  const std::vector<ClientGroup> groups{parse_tenant("chat:2"), parse_mix("chat:4:10/10")};
  EXPECT_THROW(check_group_names(groups), std::invalid_argument);
  const std::vector<ClientGroup> apart{parse_tenant("alice:2"), parse_mix("chat:4:10/10")};
  EXPECT_NO_THROW(check_group_names(apart));
}

TEST(BenchMix, EachClassGetsPromptsOfItsOwnWithinItsBounds) {
  std::vector<ClientGroup> groups{parse_mix("agent:2:3000-6000/200-400"),
                                  parse_mix("chat:4:100-200/50-60"), parse_tenant("plain:1")};
  SyntheticSpec run;
  run.seed = 9;
  const std::string description = make_group_prompts(groups, run, 30);
  ASSERT_EQ(groups[0].prompts.size(), 30u);
  ASSERT_EQ(groups[1].prompts.size(), 30u);
  EXPECT_TRUE(groups[2].prompts.empty()) << "a tenant without a workload sends the run's prompts";
  // The first 32 characters lie within the first 16 tokens (a token is at least " x"): prompts
  // that differ there differ within their first cache block.
  std::set<std::string> heads;
  for (const ClientGroup& group : groups) {
    for (const PromptItem& item : group.prompts) {
      EXPECT_GE(item.prompt_tokens, group.input.min) << group.name;
      EXPECT_LE(item.prompt_tokens, group.input.max) << group.name;
      EXPECT_GE(*item.max_tokens, group.output.min) << group.name;
      EXPECT_LE(*item.max_tokens, group.output.max) << group.name;
      heads.insert(item.text.substr(0, 32));
    }
  }
  EXPECT_EQ(heads.size(), 60u) << "prompts of two classes begin alike: a prefix cache hit";
  EXPECT_NE(description.find("mix class agent: 3000-6000 prompt tokens, max_tokens 200-400"),
            std::string::npos)
      << description;
}

TEST(BenchMix, OneLengthTakesTheRunsSpreadAroundIt) {
  std::vector<ClientGroup> groups{parse_mix("chat:1:100/40")};
  SyntheticSpec run;
  run.input_spread = 0.5;
  make_group_prompts(groups, run, 5);
  EXPECT_EQ(groups[0].input, (TokenRange{50, 150}));
  EXPECT_EQ(groups[0].output, (TokenRange{40, 40}));
}

TEST(BenchMix, AClassOfHugePromptsKeepsFewerDistinctOnes) {
  std::vector<ClientGroup> groups{parse_mix("huge:1:4000000/1")};
  const std::string description = make_group_prompts(groups, SyntheticSpec{}, 100);
  EXPECT_LT(groups[0].prompts.size(), 100u);
  EXPECT_GE(groups[0].prompts.size(), 1u);
  EXPECT_LE(groups[0].prompts.size() * 4000000, kGroupPromptTokens);
  EXPECT_NE(description.find("distinct prompts, then again in turn"), std::string::npos)
      << description;
}

/// A streamed request whose tokens arrived `gaps_ms` apart after a TTFT of `ttft_ms`.
Record streamed(const std::string& group, double ttft_ms, const std::vector<double>& gaps_ms) {
  Record record;
  record.group = group;
  record.t.start_ns = 1'000'000'000;
  std::int64_t now = record.t.start_ns + static_cast<std::int64_t>(ttft_ms * 1e6);
  record.t.first_byte_ns = record.t.first_token_ns = now;
  record.t.events.push_back({now, 1});
  for (double gap : gaps_ms) {
    now += static_cast<std::int64_t>(gap * 1e6);
    record.t.events.push_back({now, 1});
  }
  record.t.end_ns = now;
  record.t.output_tokens = gaps_ms.size() + 1;
  record.t.prompt_tokens = 1;
  return record;
}

TEST(BenchMix, EachClassesFiguresComeFromItsOwnRequests) {
  RunCommand command;
  command.groups = {parse_mix("agent:1:5000-60000/200-2000"), parse_mix("chat:2:100-500/50-300"),
                    parse_tenant("someone:1")};
  RunResult run;
  run.records.push_back(streamed("agent", 900, {20, 20, 20, 20}));
  // A chat decoding while the agent's prompt was prefilled: one gap of 600 ms among gaps of 20.
  run.records.push_back(streamed("chat", 30, {20, 600, 20, 20}));
  run.records.push_back(streamed("chat", 40, {20, 20, 20, 20}));
  run.records.push_back(streamed("someone", 10, {5}));
  run.wall_s = 2;
  const auto classes = group_figures(command, run, {}, ClientGroup::Kind::mix);
  ASSERT_EQ(classes.size(), 2u) << "the tenant is not a class of the mix";
  EXPECT_EQ(classes[0].name, "agent");
  EXPECT_EQ(classes[0].agg.ok, 1u);
  EXPECT_EQ(classes[1].agg.ok, 2u);
  EXPECT_NEAR(classes[0].agg.itl.max, 0.020, 1e-9);
  EXPECT_NEAR(classes[1].agg.itl.max, 0.600, 1e-9);
  EXPECT_GT(classes[0].agg.ttft.p50, classes[1].agg.ttft.p99);
  EXPECT_DOUBLE_EQ(classes[1].agg.output_tok_s, 5.0);  // 10 tokens over the run's 2 s

  Aggregate all = aggregate(run.measured(), {});
  const Table table = mix_table(classes, all);
  ASSERT_EQ(table.rows().size(), 3u);
  EXPECT_EQ(table.rows()[0][0], "agent");
  EXPECT_EQ(table.rows()[0][2], "5000-60000");
  EXPECT_EQ(table.rows()[2][0], "All classes");
  std::size_t itl_max = 0;
  while (table.headers()[itl_max] != "ITL max (ms)") ++itl_max;
  EXPECT_EQ(table.rows()[1][itl_max], "600.0");
  const auto doc = mix_json(classes, all);
  const auto& chat = doc.at("classes").as_array().at(1).as_object();
  EXPECT_EQ(chat.at("name").as_string(), "chat");
  EXPECT_NEAR(chat.at("itl_max_s").as_double(), 0.6, 1e-9);
  EXPECT_EQ(chat.at("input_max").to_number<std::size_t>(), 500u);
  EXPECT_EQ(doc.at("all").at("ok").to_number<std::size_t>(), 4u);
}

}  // namespace
}  // namespace llmux::bench
