// SPDX-License-Identifier: Apache-2.0
#include "bench/report.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace llmux::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TEST(Csv, Rfc4180Quoting) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field(""), "");
  EXPECT_EQ(csv_field(" spaced "), " spaced ");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field("cr\r"), "\"cr\r\"");
  const std::vector<std::string> rec{"direct /v1/completions", "45.2", "x,\"y\""};
  EXPECT_EQ(csv_record(rec), "direct /v1/completions,45.2,\"x,\"\"y\"\"\"\r\n");
}

TEST(Csv, Table) {
  Table t({"Path", "tok/s"});
  t.add_row({"gateway, chat", "485.0"}).add_row({"direct"});
  EXPECT_EQ(to_csv(t), "Path,tok/s\r\n\"gateway, chat\",485.0\r\ndirect,\r\n");
}

TEST(Markdown, AlignedSeedShapedTable) {
  Table t({"Path", "Serial tok/s", "N=8 tok/s", "N=16 tok/s"});
  t.add_row({"direct completions", "45.1", "301.2", "305.0"});
  t.add_row({"gateway chat", "44.9", "330.0", "485.3"});
  MarkdownOptions opt;
  opt.title = "Direct vs gateway";
  opt.notes = {"TTFT is measured to the first content token."};
  const std::string md = to_markdown(t, opt);
  const std::string want =
      "### Direct vs gateway\n"
      "\n"
      "| Path               | Serial tok/s | N=8 tok/s | N=16 tok/s |\n"
      "| ------------------ | -----------: | --------: | ---------: |\n"
      "| direct completions |         45.1 |     301.2 |      305.0 |\n"
      "| gateway chat       |         44.9 |     330.0 |      485.3 |\n"
      "\n"
      "TTFT is measured to the first content token.\n";
  EXPECT_EQ(md, want);
}

TEST(Markdown, EveryRowHasTheSameWidthWithUnicodeAndPipes) {
  Table t({"Level", "Ratio"}, {Align::left, Align::right});
  t.add_row({"N=8", "1.02×"});
  t.add_row({"a|b", "0.9×"});
  t.add_row({"x\ny", ""});
  const std::string md = to_markdown(t);
  std::istringstream in(md);
  std::string line;
  std::vector<std::size_t> widths;
  while (std::getline(in, line)) widths.push_back(display_width(line));
  ASSERT_EQ(widths.size(), 5u);
  for (std::size_t w : widths) EXPECT_EQ(w, widths.front()) << md;
  EXPECT_NE(md.find("a\\|b"), std::string::npos);
  EXPECT_NE(md.find("x y"), std::string::npos);
  EXPECT_NE(md.find("| 1.02× |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ----: |"), std::string::npos) << md;
  EXPECT_EQ(display_width("1.02×"), 5u);
}

TEST(Markdown, RowTooWideThrows) {
  Table t({"a", "b"});
  EXPECT_THROW(t.add_row({"1", "2", "3"}), std::invalid_argument);
}

TEST(Format, NumbersAndPercents) {
  EXPECT_EQ(fmt_num(45.06), "45.1");
  EXPECT_EQ(fmt_num(300, 0), "300");
  EXPECT_EQ(fmt_num(kNaN), "-");
  EXPECT_EQ(fmt_num(std::numeric_limits<double>::infinity()), "-");
  EXPECT_EQ(fmt_pct(0.052), "+5.2%");
  EXPECT_EQ(fmt_pct(-0.1), "-10.0%");
}

TEST(Json, SummaryWithScaleAndNaN) {
  std::vector<double> v{0.010, 0.020, 0.030};
  std::vector<double> extra{99.9};
  boost::json::object o = to_json(summarize(v, extra), 1e3);
  EXPECT_EQ(o.at("count").as_uint64(), 3u);
  EXPECT_NEAR(o.at("p50").as_double(), 20.0, 1e-9);
  EXPECT_NEAR(o.at("max").as_double(), 30.0, 1e-9);
  EXPECT_TRUE(o.contains("p99.9"));
  boost::json::object empty = to_json(summarize(std::vector<double>{}));
  EXPECT_TRUE(empty.at("mean").is_null());
  EXPECT_TRUE(json_number(kNaN).is_null());
}

TEST(Json, RequestTimingAndAggregateRoundTrip) {
  RequestTiming t;
  t.start_ns = 1000;
  t.first_byte_ns = 2000;
  t.first_token_ns = 3000;
  t.end_ns = 9000;
  t.events = {{3000, 1}, {5000, 2}};
  t.output_tokens = 3;
  boost::json::object o = to_json(t);
  EXPECT_EQ(o.at("error").as_string(), "none");
  EXPECT_TRUE(o.at("prompt_tokens").is_null());
  const auto& ev = o.at("events").as_array();
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1].as_array()[0].to_number<std::int64_t>(), 4000);  // offset from start
  EXPECT_EQ(ev[1].as_array()[1].to_number<std::int64_t>(), 2);

  Aggregate a = aggregate(std::vector<RequestTiming>{t});
  boost::json::value doc = boost::json::object{{"aggregate", to_json(a)}, {"requests", {o}}};
  const std::string text = pretty_json(doc);
  EXPECT_EQ(text.back(), '\n');
  EXPECT_NE(text.find("\n  \"aggregate\": {\n"), std::string::npos) << text;
  EXPECT_NE(text.find("[4000, 2]"), std::string::npos) << text;  // scalar arrays stay inline
  // It parses back to the same document (Boost.JSON 1.81's parser may be off by an ulp).
  boost::json::value back = boost::json::parse(text);
  auto flat = flatten_numbers(back);
  auto orig = flatten_numbers(doc);
  ASSERT_EQ(flat.size(), orig.size());
  for (const auto& [k, v] : orig) {
    ASSERT_TRUE(flat.count(k)) << k;
    EXPECT_NEAR(flat.at(k), v, std::fabs(v) * 1e-14) << k;
  }
  EXPECT_NEAR(flat.at("aggregate.output_tok_s"), 3 / 8e-6, 1e-3);
  EXPECT_NEAR(flat.at("aggregate.ttft_ms.p50"), 0.002, 1e-12);
  EXPECT_DOUBLE_EQ(flat.at("requests.0.events.1.1"), 2);
  EXPECT_EQ(flat.count("aggregate.errors"), 0u);  // objects are not leaves
  EXPECT_EQ(flat.count("requests.0.error"), 0u);  // strings are left out
}

TEST(Json, PrettyDoublesStayDoubles) {
  boost::json::value v = boost::json::object{{"a", 2.0}, {"b", 0.1}, {"c", kNaN}, {"d", 7}};
  const std::string text = pretty_json(v);
  EXPECT_NE(text.find("\"a\": 2.0"), std::string::npos) << text;
  EXPECT_NE(text.find("\"b\": 0.1"), std::string::npos) << text;
  EXPECT_NE(text.find("\"c\": null"), std::string::npos) << text;
  EXPECT_NE(text.find("\"d\": 7"), std::string::npos) << text;
  boost::json::value back = boost::json::parse(text);
  EXPECT_TRUE(back.at("a").is_double());
}

TEST(Compare, DirectionsByName) {
  EXPECT_EQ(guess_direction("output_tok_s"), Direction::higher_is_better);
  EXPECT_EQ(guess_direction("goodput_req_s"), Direction::higher_is_better);
  EXPECT_EQ(guess_direction("decode_tok_s.p50"), Direction::higher_is_better);
  EXPECT_EQ(guess_direction("ttft_ms.p99"), Direction::lower_is_better);
  EXPECT_EQ(guess_direction("aggregate.itl_ms.mean"), Direction::lower_is_better);
  EXPECT_EQ(guess_direction("errors.timeout"), Direction::lower_is_better);
  EXPECT_EQ(guess_direction("failed"), Direction::lower_is_better);
  EXPECT_EQ(guess_direction("ttft_ms.count"), Direction::neutral);
  EXPECT_EQ(guess_direction("output_tokens"), Direction::neutral);
}

TEST(Compare, FlagsChangesBeyondThreshold) {
  const std::map<std::string, double> a{
      {"output_tok_s", 100}, {"ttft_ms.p50", 200}, {"tpot_ms.p50", 20}, {"failed", 0},
      {"requests", 10},      {"itl_ms.p99", 50},   {"old_metric", 1},   {"edge_tok_s", 100}};
  const std::map<std::string, double> b{
      {"output_tok_s", 94}, {"ttft_ms.p50", 204}, {"tpot_ms.p50", 18}, {"failed", 2},
      {"requests", 20},     {"itl_ms.p99", 60},   {"new_metric", 1},   {"edge_tok_s", 105}};
  // Say the custom metric "itl_ms.p99" is higher-is-better, against the name.
  Comparison c = compare(a, b, {{"itl_ms.p99", Direction::higher_is_better}});
  auto get = [&](const std::string& name) -> const MetricChange& {
    for (const auto& m : c.changes) {
      if (m.metric == name) return m;
    }
    throw std::runtime_error("missing " + name);
  };
  EXPECT_EQ(c.changes.size(), 9u);
  const auto& tok = get("output_tok_s");
  EXPECT_NEAR(tok.change, -0.06, 1e-12);
  EXPECT_TRUE(tok.flagged);
  EXPECT_TRUE(tok.regression);
  const auto& ttft = get("ttft_ms.p50");
  EXPECT_NEAR(ttft.change, 0.02, 1e-12);
  EXPECT_FALSE(ttft.flagged);
  EXPECT_FALSE(ttft.regression);
  const auto& tpot = get("tpot_ms.p50");
  EXPECT_TRUE(tpot.flagged);
  EXPECT_TRUE(tpot.improvement);
  const auto& failed = get("failed");
  EXPECT_TRUE(std::isinf(failed.change));
  EXPECT_TRUE(failed.regression);
  const auto& req = get("requests");
  EXPECT_TRUE(req.flagged);
  EXPECT_FALSE(req.regression);
  EXPECT_FALSE(req.improvement);
  const auto& itl = get("itl_ms.p99");
  EXPECT_TRUE(itl.improvement);             // the override wins over the name
  EXPECT_FALSE(get("edge_tok_s").flagged);  // exactly 5% is not beyond 5%
  EXPECT_TRUE(get("old_metric").flagged);
  EXPECT_FALSE(get("old_metric").b.has_value());
  EXPECT_FALSE(get("new_metric").a.has_value());
  EXPECT_EQ(c.regressions, 2u);
  EXPECT_EQ(c.improvements, 2u);
  EXPECT_EQ(c.flagged, 7u);

  // A looser threshold flags less.
  Comparison loose = compare(a, b, {}, 0.10);
  EXPECT_FALSE(loose.changes.empty());
  for (const auto& m : loose.changes) {
    if (m.metric == "output_tok_s") {
      EXPECT_FALSE(m.flagged);
    }
  }

  Table t = comparison_table(c, /*only_flagged=*/true);
  EXPECT_EQ(t.rows().size(), 7u);
  const std::string md = to_markdown(t);
  EXPECT_NE(md.find("regression"), std::string::npos);
  EXPECT_NE(md.find("-6.0%"), std::string::npos) << md;
  EXPECT_NE(md.find("only in A"), std::string::npos);
  EXPECT_EQ(comparison_table(c).rows().size(), 9u);
}

}  // namespace
}  // namespace llmux::bench
