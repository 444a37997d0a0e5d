// SPDX-License-Identifier: Apache-2.0
// `bench run --tenant`: the flag's forms and errors, Jain's index, and per-tenant figures taken
// from the tenant's own requests over the run's one window.
#include "bench/tenants.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

namespace llmux::bench {
namespace {

TEST(BenchTenants, ParsesNameClientsPriorityAndWorkload) {
  const ClientGroup plain = parse_tenant("alice:4");
  EXPECT_EQ(plain.name, "alice");
  EXPECT_EQ(plain.clients, 4u);
  EXPECT_EQ(plain.priority, "");
  EXPECT_TRUE(plain.input.empty());
  EXPECT_EQ(plain.kind, ClientGroup::Kind::tenant);
  const ClientGroup full = parse_tenant("nightly:64:batch:128/1024");
  EXPECT_EQ(full.name, "nightly");
  EXPECT_EQ(full.clients, 64u);
  EXPECT_EQ(full.priority, "batch");
  EXPECT_EQ(full.input, (TokenRange{128, 128}));
  EXPECT_EQ(full.output, (TokenRange{1024, 1024}));
  const ClientGroup ranged = parse_tenant("agents:2:batch:5000-60000/200-2000");
  EXPECT_EQ(ranged.input, (TokenRange{5000, 60000}));
  EXPECT_EQ(ranged.output, (TokenRange{200, 2000}));
}

TEST(BenchTenants, BadFormsAreErrorsSayingWhat) {
  for (const char* text : {"alice", "alice:0", "alice:x", ":4", "a:4:b:128", "a:4:b:0/5",
                           "a:4:b:c:d", "a:4:b:9-3/5"}) {
    try {
      parse_tenant(text);
      ADD_FAILURE() << text << " was accepted";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find(text), std::string::npos) << error.what();
    }
  }
}

TEST(BenchTenants, JainsIndexIsOneWhenEqualAndOneOverNWhenOneTakesAll) {
  const std::vector<double> equal{5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(jain_index(equal), 1.0);
  const std::vector<double> one{8, 0, 0, 0};
  EXPECT_DOUBLE_EQ(jain_index(one), 0.25);
  const std::vector<double> three_to_one{3, 1};
  EXPECT_DOUBLE_EQ(jain_index(three_to_one), 16.0 / 20.0);
}

TEST(BenchTenants, EachTenantsFiguresComeFromItsOwnRequests) {
  RunCommand command;
  command.groups = {parse_tenant("fast:1"), parse_tenant("slow:1")};
  RunResult run;
  auto add = [&](const std::string& tenant, double ttft_s, std::uint64_t tokens) {
    Record record;
    record.group = tenant;
    record.t.start_ns = 1'000'000'000;
    record.t.first_byte_ns = record.t.first_token_ns =
        record.t.start_ns + static_cast<std::int64_t>(ttft_s * 1e9);
    record.t.events.push_back({*record.t.first_token_ns, 1});
    record.t.end_ns = 3'000'000'000;
    record.t.events.push_back({record.t.end_ns, static_cast<std::uint32_t>(tokens - 1)});
    record.t.output_tokens = tokens;
    run.records.push_back(record);
  };
  add("fast", 0.01, 100);
  add("slow", 0.5, 300);
  add("slow", 0.7, 300);
  run.wall_s = 2;
  const auto figures = group_figures(command, run, {}, ClientGroup::Kind::tenant);
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0].agg.ok, 1u);
  EXPECT_EQ(figures[1].agg.ok, 2u);
  EXPECT_DOUBLE_EQ(figures[0].agg.output_tok_s, 50.0);   // 100 tokens over the 2 s window
  EXPECT_DOUBLE_EQ(figures[1].agg.output_tok_s, 300.0);  // 600 over the same window
  EXPECT_LT(figures[0].agg.ttft.p99, figures[1].agg.ttft.p50);
}

}  // namespace
}  // namespace llmux::bench
