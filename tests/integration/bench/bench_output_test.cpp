// SPDX-License-Identifier: Apache-2.0
// What `llmux bench` tells its user (issue 12): the exit status when requests failed or were
// rejected, errors shown as errors (never "nan"), CSV cells that are numbers with units in the
// headers, the --out report (index.html, SVG and PNG charts whose titles name the targets), and
// compare's gateway analysis through a real gateway spanning two simulators.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;

std::string url(int port) {
  return "http://127.0.0.1:" + std::to_string(port);
}

RunResult bench(std::vector<std::string> args,
                std::chrono::seconds timeout = std::chrono::seconds(90)) {
  args.insert(args.begin(), {llmux_binary(), "bench"});
  return run_to_completion(args, timeout);
}

/// A loopback port nothing listens on (bound, then closed).
int closed_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

bool have_gnuplot() {
  return std::system("command -v gnuplot >/dev/null 2>&1") == 0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// Checks a CSV written by llmux bench: a header of lowercase names, and every cell outside the
/// label columns empty (no figure) or a plain number. Returns the number of data rows.
std::size_t expect_numeric_csv(const std::string& path) {
  static const std::set<std::string> kLabels{"target", "url",      "prompt",
                                             "path",   "endpoint", "baseline"};
  const std::string text = read_text_file(path);
  EXPECT_FALSE(text.empty()) << path;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  std::size_t rows = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    if (header.empty()) {
      header = cells;
      for (const auto& h : header) EXPECT_EQ(h, lower(h)) << path << ": header " << h;
      continue;
    }
    ++rows;
    EXPECT_EQ(cells.size(), header.size()) << path << ": " << line;
    for (std::size_t i = 0; i < std::min(cells.size(), header.size()); ++i) {
      if (kLabels.count(header[i]) || cells[i].empty()) continue;
      std::size_t pos = 0;
      try {
        (void)std::stod(cells[i], &pos);
      } catch (const std::exception&) {
        pos = 0;
      }
      EXPECT_EQ(pos, cells[i].size())
          << path << ": column " << header[i] << " holds '" << cells[i] << "', not a number";
    }
  }
  return rows;
}

TEST(BenchExit, EveryRequestFailedExitsOneAndShowsErrorsNeverNan) {
  const std::string dead = url(closed_port());
  TempDir out;
  RunResult t = bench({"throughput", "--target", "server1=" + dead, "--model", "m", "--repeat", "2",
                       "--concurrency", "2", "--out", out.path(), "--no-plots"});
  EXPECT_EQ(t.exit_code, 1) << t.err << t.out;
  EXPECT_EQ(lower(t.out).find("nan"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("error (all 2 failed)"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Result: FAILED: 8 of 8 requests failed (8 connect)"), std::string::npos)
      << t.out;
  EXPECT_NE(t.err.find("error: Result: FAILED"), std::string::npos) << t.err;
  EXPECT_EQ(expect_numeric_csv(out.path() + "/throughput_concurrent.csv"), 1u);
  EXPECT_EQ(expect_numeric_csv(out.path() + "/throughput_serial.csv"), 3u);
  const std::string html = read_text_file(out.path() + "/index.html");
  EXPECT_NE(html.find("status failed"), std::string::npos);
  EXPECT_EQ(lower(html).find("nan"), std::string::npos);
  const json::value doc = parse_json(read_text_file(out.path() + "/throughput.json"));
  EXPECT_EQ(doc.at("outcome").at("exit_status").as_int64(), 1);
  EXPECT_TRUE(doc.at("summary").at("server1").at("n2").at("tok_s").is_null());

  RunResult c = bench({"compare", "--direct", dead, "--gateway", dead, "--model", "m", "--repeat",
                       "1", "--concurrency", "2"});
  EXPECT_EQ(c.exit_code, 1) << c.err << c.out;
  EXPECT_EQ(lower(c.out).find("nan"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("error (all 2 failed)"), std::string::npos) << c.out;
}

TEST(BenchExit, RejectionsAreReportedAndFailTheRunOnlyWithTheFlag) {
  SimServer sim({"--time-scale", "20", "--fault-error-rate", "1", "--fault-error-status", "429"});
  const std::vector<std::string> args{
      "run",          "--url", url(sim.port()), "--concurrency", "2", "--num-requests", "6",
      "--output-len", "4",     "--no-progress"};
  RunResult r = bench(args);
  EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("6 of 6 rejected (429 Too Many Requests, not a failure"), std::string::npos)
      << r.out;
  std::vector<std::string> strict = args;
  strict.push_back("--fail-on-reject");
  RunResult f = bench(strict);
  EXPECT_EQ(f.exit_code, 1) << f.err << f.out;
  EXPECT_NE(f.out.find("Result: FAILED: 6 of 6 rejected"), std::string::npos) << f.out;
  // A 503 is a failure without any flag.
  SimServer down({"--time-scale", "20", "--fault-error-rate", "1", "--fault-error-status", "503"});
  std::vector<std::string> a5 = args;
  a5[2] = url(down.port());
  EXPECT_EQ(bench(a5).exit_code, 1);
}

TEST(BenchOut, RunWritesNumericCsvChartsAndAnIndex) {
  SimServer sim({"--time-scale", "20"});
  TempDir out;
  RunResult r =
      bench({"run", "--url", url(sim.port()), "--endpoint", "chat", "--sweep", "1,2",
             "--num-requests", "6", "--output-len", "8", "--ignore-eos", "--out", out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(expect_numeric_csv(out.path() + "/summary.csv"), 2u);
  const std::string summary = read_text_file(out.path() + "/summary.csv");
  EXPECT_EQ(summary.rfind("concurrency,requests,ok,failed,rejected,req_s,output_tok_s,", 0), 0u)
      << summary;
  for (const char* d :
       {"tok_s_vs_concurrency", "latency_ttft", "latency_itl", "latency_e2e", "tok_s_over_time"}) {
    const std::string dat = read_text_file(out.path() + "/charts/" + d + ".dat");
    EXPECT_NE(dat.find(url(sim.port())), std::string::npos) << d << ": title names the target";
  }
  const std::string html = read_text_file(out.path() + "/index.html");
  EXPECT_NE(html.find("<table>"), std::string::npos);
  EXPECT_NE(html.find("all 12 requests succeeded"), std::string::npos) << html;
  if (have_gnuplot()) {
    for (const char* c :
         {"tok_s_vs_concurrency", "latency_ttft", "latency_itl", "tok_s_over_time"}) {
      EXPECT_TRUE(fs::exists(out.path() + "/charts/" + c + ".svg")) << c;
      EXPECT_TRUE(fs::exists(out.path() + "/charts/" + c + ".png")) << c;
      EXPECT_NE(html.find(std::string("charts/") + c + ".svg"), std::string::npos) << c;
    }
  }
}

TEST(BenchOut, SeedScriptsWriteNumericCsvAndChartsNamingTheTargets) {
  SimServer a({"--time-scale", "20"});
  SimServer b({"--time-scale", "20"});
  TempDir out;
  RunResult t = bench({"throughput", "--target", "server1=" + url(a.port()), "--target",
                       "server2=" + url(b.port()), "--repeat", "1", "--concurrency", "2,4", "--out",
                       out.path() + "/tp"});
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  EXPECT_EQ(expect_numeric_csv(out.path() + "/tp/throughput_concurrent.csv"), 4u);
  EXPECT_EQ(expect_numeric_csv(out.path() + "/tp/throughput_serial.csv"), 6u);
  const std::string conc = read_text_file(out.path() + "/tp/throughput_concurrent.csv");
  EXPECT_EQ(conc.find("N="), std::string::npos) << conc;
  EXPECT_NE(conc.find("aggregate_tok_s"), std::string::npos) << conc;
  const std::string scale = read_text_file(out.path() + "/tp/charts/tok_s_vs_concurrency.dat");
  EXPECT_NE(scale.find("server1 (" + url(a.port()) + ")"), std::string::npos) << scale;
  EXPECT_NE(scale.find("server2 (" + url(b.port()) + ")"), std::string::npos) << scale;
  EXPECT_TRUE(fs::exists(out.path() + "/tp/charts/n4_e2e.dat"));
  EXPECT_TRUE(fs::exists(out.path() + "/tp/charts/tok_s_over_time.dat"));
  const std::string thtml = read_text_file(out.path() + "/tp/index.html");
  EXPECT_NE(thtml.find("Concurrent aggregate"), std::string::npos);
  EXPECT_NE(thtml.find("AGREE"), std::string::npos) << thtml;

  RunResult c = bench({"compare", "--direct", url(a.port()), "--gateway", url(b.port()), "--repeat",
                       "1", "--concurrency", "2", "--out", out.path() + "/cmp"});
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  EXPECT_EQ(expect_numeric_csv(out.path() + "/cmp/compare_paths.csv"), 8u);
  EXPECT_EQ(expect_numeric_csv(out.path() + "/cmp/compare_gateway.csv"), 4u);
  const std::string ratios = read_text_file(out.path() + "/cmp/compare_gateway.csv");
  EXPECT_EQ(ratios.find("x,"), std::string::npos) << ratios;
  EXPECT_NE(ratios.find("added_latency_p50_ms"), std::string::npos) << ratios;
  const std::string cdat = read_text_file(out.path() + "/cmp/charts/tok_s_vs_concurrency.dat");
  EXPECT_NE(cdat.find(url(a.port())), std::string::npos) << cdat;
  EXPECT_NE(cdat.find(url(b.port())), std::string::npos) << cdat;
  if (have_gnuplot()) {
    EXPECT_TRUE(fs::exists(out.path() + "/cmp/charts/tok_s_vs_concurrency.svg"));
    EXPECT_TRUE(fs::exists(out.path() + "/cmp/charts/tok_s_vs_concurrency.png"));
    EXPECT_TRUE(fs::exists(out.path() + "/tp/charts/tok_s_vs_concurrency.png"));
  }
}

TEST(BenchCompare, AGatewaySpanningTwoMachinesIsScaleOutNotOverhead) {
  SimServer a({"--time-scale", "20"});
  SimServer b({"--time-scale", "20"});
  // The seed's routing: chat round-robined over both, completions to server1 only.
  auto gw = GatewayServer::with_config(seed_config(a.port(), b.port()));
  TempDir out;
  RunResult c = bench({"compare", "--direct", url(a.port()), "--gateway", url(gw->port()),
                       "--repeat", "2", "--concurrency", "2,4", "--out", out.path(), "--no-plots"});
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/compare.json"));
  const auto& chat = doc.at("summary").at("gateway chat").at("vs_direct");
  EXPECT_TRUE(chat.at("n4").at("scale_out").as_bool()) << chat;
  EXPECT_EQ(chat.at("n4").at("backends").as_object().size(), 2u) << chat;
  EXPECT_FALSE(chat.at("serial").at("scale_out").as_bool());
  const auto& comp = doc.at("summary").at("gateway completions").at("vs_direct");
  EXPECT_FALSE(comp.at("n4").at("scale_out").as_bool()) << comp;
  EXPECT_EQ(comp.at("n4").at("backends").as_object().size(), 1u) << comp;
  // The gateway's own cost per request stays small on loopback (the figure exists and is sane).
  const double added = comp.at("serial").at("added_latency_p50_ms").to_number<double>();
  EXPECT_LT(std::abs(added), 200.0) << added;
  EXPECT_NE(c.out.find("scale-out, not overhead"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("server1 2, server2 2"), std::string::npos) << c.out;
}

}  // namespace
}  // namespace llmux::test
