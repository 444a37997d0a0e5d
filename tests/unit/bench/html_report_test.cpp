// SPDX-License-Identifier: Apache-2.0
// The --out report writer (bench/html_report.hpp): chart data, the gnuplot script, index.html
// and the files write_report leaves, with and without gnuplot on PATH.
#include "bench/html_report.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace llmux::bench {
namespace {
namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::size_t count(const std::string& s, const std::string& needle) {
  std::size_t n = 0;
  for (auto pos = s.find(needle); pos != std::string::npos; pos = s.find(needle, pos + 1)) ++n;
  return n;
}

/// A directory under the temp dir, removed at the end of the test.
struct Scratch {
  fs::path dir;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "llmux-html-XXXXXX").string();
    dir = ::mkdtemp(t.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

/// Sets PATH for the scope (restored after).
struct PathEnv {
  std::string old;
  explicit PathEnv(const std::string& path) {
    const char* p = std::getenv("PATH");
    old = p ? p : "";
    ::setenv("PATH", path.c_str(), 1);
  }
  ~PathEnv() { ::setenv("PATH", old.c_str(), 1); }
};

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

Chart two_series() {
  return Chart{
      .name = "tok_s_vs_concurrency",
      .title = "Output tok/s\nserver1 (http://a)\nserver2 (http://b)",
      .xlabel = "concurrency",
      .ylabel = "tok/s",
      .kind = ChartKind::lines,
      .logx = true,
      .series = {
          {"server1", {{1, 50}, {8, 300}}}, {"empty", {}}, {"server \"2\"", {{1, 49}, {8, 298}}}}};
}

TEST(ReportCharts, CdfIsAscendingEndsAtOneAndDropsNonFinite) {
  const ChartPoints p = cdf_points({3, 1, NAN, 2, INFINITY, 4});
  ASSERT_EQ(p.size(), 4u);
  EXPECT_DOUBLE_EQ(p.front().first, 1);
  EXPECT_DOUBLE_EQ(p.front().second, 0.25);
  EXPECT_DOUBLE_EQ(p.back().first, 4);
  EXPECT_DOUBLE_EQ(p.back().second, 1.0);
  for (std::size_t i = 1; i < p.size(); ++i) {
    EXPECT_LE(p[i - 1].first, p[i].first);
    EXPECT_LT(p[i - 1].second, p[i].second);
  }
  // Thinned to the bound, the maximum still there.
  std::vector<double> many(10000);
  for (std::size_t i = 0; i < many.size(); ++i) many[i] = static_cast<double>(i);
  const ChartPoints t = cdf_points(many, 100);
  EXPECT_LE(t.size(), 101u);
  EXPECT_DOUBLE_EQ(t.back().first, 9999);
  EXPECT_DOUBLE_EQ(t.back().second, 1.0);
  EXPECT_TRUE(cdf_points({}).empty());
}

TEST(ReportCharts, TokensOverTimeAreBucketedFromSuccessfulRequestsOnly) {
  const std::int64_t t0 = 1'000'000'000;
  RequestTiming streamed;  // 10 tokens in [0, 1) s, 6 in [2, 3) s
  streamed.start_ns = t0;
  streamed.events = {{t0 + 100'000'000, 4}, {t0 + 900'000'000, 6}, {t0 + 2'500'000'000, 6}};
  streamed.end_ns = t0 + 2'600'000'000;
  RequestTiming whole;  // non-streaming: its 8 tokens count when it ends, in [1, 2) s
  whole.start_ns = t0;
  whole.end_ns = t0 + 1'500'000'000;
  whole.output_tokens = 8;
  RequestTiming failed = streamed;  // not counted
  failed.error = ErrorKind::http_status;
  const std::vector<RequestTiming> ts{streamed, whole, failed};
  const ChartPoints p = tok_s_over_time(ts, t0, 1.0);
  ASSERT_EQ(p.size(), 3u);
  EXPECT_DOUBLE_EQ(p[0].first, 0);
  EXPECT_DOUBLE_EQ(p[0].second, 10);
  EXPECT_DOUBLE_EQ(p[1].second, 8);
  EXPECT_DOUBLE_EQ(p[2].first, 2);
  EXPECT_DOUBLE_EQ(p[2].second, 6);
  // Half-second buckets: a gap with nothing is a zero, not a missing point.
  const ChartPoints h = tok_s_over_time(ts, t0, 0.5);
  ASSERT_EQ(h.size(), 6u);
  EXPECT_DOUBLE_EQ(h[2].second, 0);
  EXPECT_DOUBLE_EQ(h[3].second, 16);
  EXPECT_DOUBLE_EQ(h[5].second, 12);
}

TEST(ReportCharts, DataHasOneBlockPerSeriesWithPoints) {
  const std::string d = chart_data(two_series());
  EXPECT_EQ(count(d, "\n\n\n"), 1u) << d;  // two blocks, one separator of two blank lines
  EXPECT_NE(d.find("# server1\n1 50\n8 300\n"), std::string::npos) << d;
  EXPECT_NE(d.find("# server \"2\"\n1 49\n8 298\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("# empty"), std::string::npos) << d;
}

TEST(ReportCharts, ScriptDrawsEachChartAsSvgAndPngWithQuotedTitles) {
  Chart empty{.name = "nothing",
              .title = "t",
              .xlabel = "x",
              .ylabel = "y",
              .kind = ChartKind::cdf,
              .logx = false,
              .series = {{"a", {}}}};
  const std::vector<Chart> charts{two_series(), empty};
  const std::string gp = gnuplot_script(charts, "pngcairo");
  EXPECT_NE(gp.find("set output \"tok_s_vs_concurrency.svg\""), std::string::npos) << gp;
  EXPECT_NE(gp.find("set terminal pngcairo"), std::string::npos) << gp;
  EXPECT_NE(gp.find("set output \"tok_s_vs_concurrency.png\""), std::string::npos) << gp;
  EXPECT_EQ(gp.find("nothing"), std::string::npos) << gp;  // empty charts are not drawn
  EXPECT_NE(gp.find("index 0 using 1:2"), std::string::npos) << gp;
  EXPECT_NE(gp.find("index 1 using 1:2"), std::string::npos) << gp;
  EXPECT_EQ(gp.find("index 2"), std::string::npos) << gp;  // the empty series has no block
  EXPECT_NE(gp.find("title \"server \\\"2\\\"\""), std::string::npos) << gp;
  EXPECT_NE(gp.find("Output tok/s\\nserver1 (http://a)\\nserver2 (http://b)"), std::string::npos)
      << gp;
  EXPECT_NE(gp.find("set logscale x 2"), std::string::npos);
  EXPECT_NE(gnuplot_script(charts, "png").find("set terminal png size"), std::string::npos);
}

TEST(ReportHtml, TablesAreEscapedAndNumbersRightAligned) {
  Table t({"Path", "tok/s"});
  t.add_row({"<gateway> & \"chat\"", "485.0"});
  const std::string h = to_html(t);
  EXPECT_NE(h.find("<td>&lt;gateway&gt; &amp; &quot;chat&quot;</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("<td class=\"num\">485.0</td>"), std::string::npos) << h;
  EXPECT_NE(h.find("<th class=\"num\">tok/s</th>"), std::string::npos) << h;
  EXPECT_EQ(h.find("<gateway>"), std::string::npos);
}

TEST(ReportHtml, PageShowsStatusSectionsChartsAndFiles) {
  HtmlReport r;
  r.title = "llmux bench throughput: server1";
  r.intro = "Model m";
  r.status = {"Result: FAILED: 3 of 3 requests failed (3 connect)."};
  r.failed = true;
  Table t({"Prompt", "server1"});
  t.add_row({"short", "error (all 3 failed)"});
  r.sections.push_back({"Single-stream decode", t, {"a note"}});
  r.charts = {"charts/tok_s_vs_concurrency.svg"};
  r.files = {{"throughput.json", "everything"}};
  const std::string h = to_html(r);
  EXPECT_NE(h.find("<title>llmux bench throughput: server1</title>"), std::string::npos);
  EXPECT_NE(h.find("class=\"status failed\""), std::string::npos) << h;
  EXPECT_NE(h.find("3 of 3 requests failed"), std::string::npos);
  EXPECT_NE(h.find("<h2>Single-stream decode</h2>"), std::string::npos);
  EXPECT_NE(h.find("error (all 3 failed)"), std::string::npos);
  EXPECT_NE(h.find("<img src=\"charts/tok_s_vs_concurrency.svg\""), std::string::npos) << h;
  EXPECT_NE(h.find("href=\"charts/tok_s_vs_concurrency.png\""), std::string::npos) << h;
  EXPECT_NE(h.find("<a href=\"throughput.json\">"), std::string::npos);
  r.failed = false;
  EXPECT_EQ(to_html(r).find("status failed"), std::string::npos);
}

TEST(ReportFiles, WithoutGnuplotTheDataAndPageAreWrittenAndTheChartsSkipped) {
  Scratch s;
  const fs::path empty_bin = s.dir / "bin";
  fs::create_directories(empty_bin);
  const std::vector<Chart> charts{two_series()};
  ReportFiles rf;
  {
    PathEnv path(empty_bin.string());  // no gnuplot (nor anything else) on PATH
    HtmlReport r;
    r.title = "t";
    rf = write_report((s.dir / "out").string(), r, charts);
  }
  EXPECT_FALSE(rf.gnuplot);
  EXPECT_TRUE(rf.charts.empty());
  EXPECT_NE(rf.note.find("Charts skipped: gnuplot is not installed"), std::string::npos) << rf.note;
  EXPECT_TRUE(fs::exists(s.dir / "out" / "charts" / "tok_s_vs_concurrency.dat"));
  EXPECT_TRUE(fs::exists(s.dir / "out" / "charts" / "plots.gp"));
  EXPECT_FALSE(fs::exists(s.dir / "out" / "charts" / "tok_s_vs_concurrency.svg"));
  const std::string html = slurp(s.dir / "out" / "index.html");
  EXPECT_NE(html.find("Charts skipped"), std::string::npos) << html;
  EXPECT_EQ(html.find("<img"), std::string::npos) << html;
}

TEST(ReportFiles, WithGnuplotEveryChartIsDrawnAsSvgAndPngAndShown) {
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed";
  Scratch s;
  Chart cdf{.name = "n8_e2e",
            .title = "E2E at N=8",
            .xlabel = "ms",
            .ylabel = "fraction",
            .kind = ChartKind::cdf,
            .logx = false,
            .series = {{"server1", cdf_points({10, 12, 15, 30})}}};
  const std::vector<Chart> charts{two_series(), cdf};
  HtmlReport r;
  r.title = "t";
  const ReportFiles rf = write_report(s.dir.string(), r, charts);
  EXPECT_TRUE(rf.gnuplot) << rf.note << slurp(s.dir / "charts" / "gnuplot.log");
  ASSERT_EQ(rf.charts.size(), 2u);
  for (const char* n : {"tok_s_vs_concurrency", "n8_e2e"}) {
    const fs::path svg = s.dir / "charts" / (std::string(n) + ".svg");
    const fs::path png = s.dir / "charts" / (std::string(n) + ".png");
    ASSERT_TRUE(fs::exists(svg)) << n;
    ASSERT_TRUE(fs::exists(png)) << n;
    EXPECT_NE(slurp(svg).find("<svg"), std::string::npos) << n;
    EXPECT_EQ(slurp(png).substr(1, 3), "PNG") << n;
  }
  const std::string html = slurp(s.dir / "index.html");
  EXPECT_NE(html.find("<img src=\"charts/tok_s_vs_concurrency.svg\""), std::string::npos);
  EXPECT_NE(html.find("<img src=\"charts/n8_e2e.svg\""), std::string::npos);
}

TEST(ReportFiles, NoPlotsWritesTheDataButRunsNoGnuplot) {
  Scratch s;
  const std::vector<Chart> charts{two_series()};
  HtmlReport r;
  r.title = "t";
  const ReportFiles rf = write_report(s.dir.string(), r, charts, /*draw=*/false);
  EXPECT_FALSE(rf.gnuplot);
  EXPECT_TRUE(fs::exists(s.dir / "charts" / "tok_s_vs_concurrency.dat"));
  EXPECT_FALSE(fs::exists(s.dir / "charts" / "tok_s_vs_concurrency.svg"));
  EXPECT_NE(rf.note.find("--no-plots"), std::string::npos) << rf.note;
}

}  // namespace
}  // namespace llmux::bench
