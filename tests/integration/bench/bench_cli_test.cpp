// SPDX-License-Identifier: Apache-2.0
// `llmux bench` end to end against `llmux sim` processes on port 0: every stream shape the
// simulator emits, error accounting with its faults, timings against its ground truth, the
// seed-shaped throughput/compare reports, sweeps and `bench report`. Structure and loose bounds
// only; exact figures belong to bench/bench_*.sh.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {
namespace json = boost::json;
namespace fs = std::filesystem;

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

class BenchShapes : public ::testing::TestWithParam<const char*> {};

TEST_P(BenchShapes, EveryStreamShapeParses) {
  SimServer sim({"--time-scale", "20"});
  TempDir out;
  RunResult r =
      bench({"run", "--url", url(sim), "--endpoint", GetParam(), "--concurrency", "3",
             "--num-requests", "9", "--output-len", "12", "--ignore-eos", "--out", out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("| Concurrency"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("first content token"), std::string::npos);
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& agg = level0(doc).at("aggregate").as_object();
  EXPECT_EQ(agg.at("ok").as_int64(), 9);
  EXPECT_EQ(agg.at("failed").as_int64(), 0);
  EXPECT_EQ(agg.at("estimated_requests").as_int64(), 0);  // usage arrived on every endpoint
  EXPECT_EQ(agg.at("output_tokens").as_int64(), 9 * 12);
  EXPECT_EQ(agg.at("itl_ms").at("count").as_int64(), 9 * 11);
  for (const auto& req : level0(doc).at("requests").as_array()) {
    const auto& o = req.as_object();
    EXPECT_FALSE(o.at("first_token_ns").is_null());
    EXPECT_EQ(o.at("output_tokens").as_int64(), 12);
    EXPECT_FALSE(o.at("response_id").as_string().empty());
  }
  EXPECT_TRUE(fs::exists(out.path() + "/requests.csv"));
  EXPECT_TRUE(fs::exists(out.path() + "/summary.csv"));
}
INSTANTIATE_TEST_SUITE_P(Endpoints, BenchShapes,
                         ::testing::Values("completions", "chat", "responses", "messages"));

TEST(BenchErrors, FaultsAreCountedByKindWithoutStoppingTheRun) {
  SimServer sim({"--time-scale", "20"});
  struct Case {
    const char* fault;
    const char* kind;
  };
  for (Case c : {Case{"error=500", "http_status"}, Case{"close-after=3", "broken_stream"},
                 Case{"stall-after=3", "timeout"}}) {
    TempDir out;
    RunResult r =
        bench({"run", "--url", url(sim), "--endpoint", "chat", "--concurrency", "2",
               "--num-requests", "4", "--output-len", "16", "--ignore-eos", "--idle-timeout", "0.5",
               "--header", std::string("X-Llmux-Fault: ") + c.fault, "--out", out.path()});
    // Every request failed: the run fails, and says so on stderr.
    EXPECT_EQ(r.exit_code, 1) << c.fault << r.err;
    EXPECT_NE(r.err.find("error: Result: FAILED: 4 of 4 requests failed"), std::string::npos)
        << c.fault << r.err;
    const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
    const auto& agg = level0(doc).at("aggregate").as_object();
    EXPECT_EQ(agg.at("failed").as_int64(), 4) << c.fault;
    EXPECT_EQ(agg.at("errors").at(c.kind).as_int64(), 4) << c.fault << "\n" << r.out;
    EXPECT_NE(r.out.find(c.kind), std::string::npos);
  }
}

TEST(BenchSplit, AFixedSplitSendsEachTargetItsShareOfClientsAndRequests) {
  SimServer a({"--time-scale", "20"});
  SimServer b({"--time-scale", "20"});
  TempDir out;
  RunResult r =
      bench({"run", "--split", url(a) + "=3", "--split", url(b) + "=1", "--endpoint", "chat",
             "--num-requests", "40", "--output-len", "8", "--out", out.path(), "--no-progress"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("split " + url(a) + " ×3, " + url(b) + " ×1"), std::string::npos) << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& lv = level0(doc);
  EXPECT_EQ(lv.at("aggregate").at("requests").as_int64(), 40);
  EXPECT_EQ(lv.at("aggregate").at("ok").as_int64(), 40);
  int on_a = 0, on_b = 0;
  for (const auto& q : lv.at("requests").as_array()) {
    on_a += q.at("backend") == url(a).c_str();
    on_b += q.at("backend") == url(b).c_str();
  }
  EXPECT_EQ(on_a, 30);  // 40 requests shared 3:1 like the clients
  EXPECT_EQ(on_b, 10);
  EXPECT_LE(lv.at("max_in_flight").as_int64(), 4);
  RunResult bad = bench({"run", "--split", url(a) + "=2", "--sweep", "1,2"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("--split"), std::string::npos) << bad.err;
  RunResult malformed = bench({"run", "--split", url(a)});
  EXPECT_NE(malformed.exit_code, 0);
  EXPECT_NE(malformed.err.find("URL=N"), std::string::npos) << malformed.err;
}

TEST(BenchErrors, RandomServerErrorsLeaveTheRestMeasured) {
  SimServer sim({"--time-scale", "20", "--fault-error-rate", "0.5", "--fault-error-status", "503"});
  TempDir out;
  RunResult r = bench({"run", "--url", url(sim), "--concurrency", "4", "--num-requests", "40",
                       "--output-len", "4", "--out", out.path()});
  EXPECT_EQ(r.exit_code, 1) << r.err;  // some failed: 5xx fail the run
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& agg = level0(doc).at("aggregate").as_object();
  EXPECT_EQ(agg.at("requests").as_int64(), 40);
  EXPECT_EQ(agg.at("ok").as_int64() + agg.at("failed").as_int64(), 40);
  EXPECT_GT(agg.at("ok").as_int64(), 0);
  EXPECT_GT(agg.at("errors").at("http_status").as_int64(), 0);
}

TEST(BenchTiming, WithinOneMillisecondOfTheSimulatorAtP50) {
  SimServer sim({"--time-scale", "10"});
  TempDir out;
  RunResult r = bench({"run", "--url", url(sim), "--endpoint", "chat", "--concurrency", "4",
                       "--num-requests", "16", "--output-len", "32", "--ignore-eos",
                       "--sim-ground-truth", "--out", out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& gt = doc.at("ground_truth").as_object();
  EXPECT_EQ(gt.at("requests").as_int64(), 16);
  EXPECT_LT(gt.at("ttft_abs_err_ms").at("p50").to_number<double>(), 1.0) << r.out;
  EXPECT_LT(gt.at("itl_abs_err_ms").at("p50").to_number<double>(), 1.0) << r.out;
}

TEST(BenchSweep, StopsPastTheKneeAndReportsIt) {
  // One sequence at a time: throughput cannot grow with concurrency, so the sweep stops early.
  SimServer sim({"--time-scale", "20", "--max-num-seqs", "1"});
  TempDir out;
  RunResult r = bench({"run", "--url", url(sim), "--sweep", "1,2,4,8,16", "--num-requests", "6",
                       "--output-len", "8", "--ignore-eos", "--out", out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Saturation knee at concurrency "), std::string::npos) << r.out;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  EXPECT_LT(doc.at("levels").as_array().size(), 5u);  // stopped early
  EXPECT_TRUE(doc.at("knee").at("saturated").as_bool());
}

TEST(BenchOpenLoop, PoissonArrivalsByCountAndDuration) {
  SimServer sim({"--time-scale", "20"});
  TempDir out;
  RunResult r =
      bench({"run", "--url", url(sim), "--request-rate", "200", "--num-requests", "30",
             "--duration", "10", "--warmup", "5", "--output-len", "4", "--out", out.path()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json::value doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& lv = level0(doc);
  EXPECT_EQ(lv.at("aggregate").at("requests").as_int64(), 30);
  EXPECT_EQ(lv.at("requests").as_array().size(), 35u);  // warm-up recorded, not counted
  EXPECT_NE(r.out.find("open loop"), std::string::npos);
}

TEST(BenchSeedScripts, ThroughputAndCompareReportsAreComplete) {
  SimServer a({"--time-scale", "20"});
  SimServer b({"--time-scale", "20"});
  TempDir out;
  RunResult t =
      bench({"throughput", "--target", "server1=" + url(a), "--target", "server2=" + url(b),
             "--repeat", "1", "--concurrency", "2,4", "--out", out.path()});
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  for (const char* s :
       {"Single-stream decode", "| short", "| medium", "| long", "Concurrent aggregate", "| N=2",
        "| N=4", "- N=2:", "- N=4:", "serial (medium)"})
    EXPECT_NE(t.out.find(s), std::string::npos) << s << "\n" << t.out;
  const json::value tdoc = parse_json(read_text_file(out.path() + "/throughput.json"));
  EXPECT_GT(tdoc.at("summary").at("server2").at("n4").at("tok_s").to_number<double>(), 0);

  RunResult c = bench({"compare", "--direct", url(a), "--gateway", url(b), "--repeat", "1",
                       "--concurrency", "2", "--connection", "keep-alive", "--out", out.path()});
  ASSERT_EQ(c.exit_code, 0) << c.err << c.out;
  for (const char* s : {"direct completions", "gateway completions", "direct chat", "gateway chat",
                        "Gateway vs direct: tok/s ratio and the latency the gateway adds",
                        "Added latency p50 ms", "N=2"})
    EXPECT_NE(c.out.find(s), std::string::npos) << s << "\n" << c.out;
  const json::value cdoc = parse_json(read_text_file(out.path() + "/compare.json"));
  EXPECT_EQ(cdoc.at("summary").as_object().size(), 4u);

  // Each gateway path has its ratio and added latency per level in the JSON.
  const auto& vs = cdoc.at("summary").at("gateway chat").at("vs_direct").as_object();
  EXPECT_TRUE(vs.at("serial").at("added_latency_p50_ms").is_number()) << vs;
  EXPECT_TRUE(vs.at("n2").at("tok_s_ratio").is_number()) << vs;
  EXPECT_FALSE(cdoc.at("summary").as_object().contains("direct chat") &&
               cdoc.at("summary").at("direct chat").as_object().contains("vs_direct"));

  // report: a result against itself changes nothing; a throughput result against a compare
  // result is refused with a clear message (exit status 2), not compared.
  RunResult same =
      bench({"report", out.path() + "/throughput.json", out.path() + "/throughput.json"});
  EXPECT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("0 changed"), std::string::npos) << same.out;
  RunResult diff = bench({"report", out.path() + "/throughput.json", out.path() + "/compare.json",
                          "--threshold", "5%"});
  EXPECT_EQ(diff.exit_code, 2) << diff.out;
  EXPECT_EQ(diff.out.find("| Metric"), std::string::npos) << diff.out;
  EXPECT_NE(diff.err.find("a `llmux bench throughput` result"), std::string::npos) << diff.err;
  EXPECT_NE(diff.err.find("a `llmux bench compare` result"), std::string::npos) << diff.err;
  EXPECT_NE(diff.err.find("same kind"), std::string::npos) << diff.err;
  RunResult same_c = bench({"report", out.path() + "/compare.json", out.path() + "/compare.json"});
  EXPECT_EQ(same_c.exit_code, 0) << same_c.err;
}

TEST(BenchCli, HelpExplainsEveryFlag) {
  RunResult top = bench({"--help"});
  EXPECT_EQ(top.exit_code, 0);
  for (const char* s : {"run", "throughput", "compare", "report"})
    EXPECT_NE(top.out.find(s), std::string::npos) << s;
  struct Sub {
    const char* name;
    std::vector<const char*> flags;
  };
  for (const Sub& s : {Sub{"run",
                           {"--url",
                            "--endpoint",
                            "--model",
                            "--header",
                            "--concurrency",
                            "--request-rate",
                            "--num-requests",
                            "--duration",
                            "--warmup",
                            "--sweep",
                            "--knee-efficiency",
                            "--knee-patience",
                            "--seed",
                            "--input-len",
                            "--output-len",
                            "--output-spread",
                            "--dataset",
                            "--max-prompts",
                            "--no-stream",
                            "--ignore-eos",
                            "--temperature",
                            "--connection",
                            "--timeout",
                            "--idle-timeout",
                            "--connect-timeout",
                            "--slo-ttft",
                            "--slo-tpot",
                            "--slo-e2e",
                            "--percentiles",
                            "--out",
                            "--no-progress",
                            "--no-plots",
                            "--sim-ground-truth",
                            "--request-id-prefix",
                            "--conversation-turns",
                            "--conversation-mode",
                            "--shared-prefix",
                            "--prefix-len",
                            "--fail-on-reject"}},
                       Sub{"throughput",
                           {"--target", "--agree", "--model", "--repeat", "--concurrency",
                            "--max-tokens", "--connection", "--timeout", "--out", "--no-progress",
                            "--no-plots", "--fail-on-reject"}},
                       Sub{"compare",
                           {"--direct", "--gateway", "--path", "--prompt", "--model", "--repeat",
                            "--concurrency", "--max-tokens", "--connection", "--timeout", "--out",
                            "--no-progress", "--no-plots", "--fail-on-reject"}},
                       Sub{"report", {"--threshold", "--all"}}}) {
    RunResult r = bench({s.name, "--help"});
    EXPECT_EQ(r.exit_code, 0) << s.name;
    for (const char* f : s.flags) EXPECT_NE(r.out.find(f), std::string::npos) << s.name << " " << f;
  }
  RunResult bad = bench({"run", "--url", "https://x"});
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("https"), std::string::npos) << bad.err;
}

}  // namespace
}  // namespace llmux::test
