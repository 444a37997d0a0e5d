// SPDX-License-Identifier: Apache-2.0
// The operator's view (issue 12): the gateway's own GET /metrics (names, types, labels, values
// after a known sequence of requests; `promtool check metrics`), token counts for streams whose
// client did not ask for usage (asked upstream, the extra chunk removed), metrics.listen, the
// dashboard's data, and the admin API (token required, drain honoured, backends added and
// removed at run time without dropping streams, a reload replacing those changes).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

constexpr int kOutputTokens = 7;  // every simulated answer: --output-len fixed:7
const std::string kToken = "test-admin-token-0123456789";
const Headers kAuth = {{"Authorization", "Bearer " + kToken}};

std::string chat(bool stream, const std::string& extra = "", const std::string& model = "") {
  return R"({"model":")" + (model.empty() ? std::string("Qwen3.6-35B-A3B") : model) +
         R"(","messages":[{"role":"user","content":"hello there"}],"max_tokens":64,"stream":)" +
         (stream ? "true" : "false") + extra + "}";
}

/// One sample of Prometheus text: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> samples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    const auto brace = line.find('{');
    const auto space = line.rfind(' ');
    if (space == std::string::npos) continue;
    s.name = line.substr(0, std::min(brace, space));
    if (brace != std::string::npos && brace < space) {
      const auto close = line.find('}', brace);
      std::string labels = line.substr(brace + 1, close - brace - 1);
      std::size_t i = 0;
      while (i < labels.size()) {
        const auto eq = labels.find('=', i);
        const auto q2 = labels.find('"', eq + 2);
        s.labels[labels.substr(i, eq - i)] = labels.substr(eq + 2, q2 - eq - 2);
        i = q2 + 2;
      }
    }
    s.value = std::stod(line.substr(space + 1));
    out.push_back(std::move(s));
  }
  return out;
}

/// Sum of the samples named `name` whose labels include every one of `want`.
double sum_of(const std::vector<Sample>& all, const std::string& name,
              const std::map<std::string, std::string>& want = {}) {
  double total = 0;
  for (const auto& s : all) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : want) {
      auto it = s.labels.find(k);
      if (it == s.labels.end() || it->second != v) match = false;
    }
    if (match) total += s.value;
  }
  return total;
}

std::string type_of(const std::string& text, const std::string& family) {
  const std::string tag = "# TYPE " + family + " ";
  const auto at = text.find(tag);
  if (at == std::string::npos) return "";
  const auto end = text.find('\n', at);
  return text.substr(at + tag.size(), end - at - tag.size());
}

/// GET /metrics once the gateway has counted `requests` requests and none is in flight (at
/// most 3 s): a request is counted once its last byte was written, so a client that has the whole
/// answer may scrape a moment before (another worker answers the scrape).
Response settled_metrics(int port, double requests) {
  Response m;
  for (int i = 0; i < 150; ++i) {
    m = HttpClient(port).get("/metrics");
    const auto all = samples(m.body);
    if (m.status != 200 || (sum_of(all, "llmux_requests_total") >= requests &&
                            sum_of(all, "llmux_backend_inflight_requests") == 0))
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling interval
  }
  return m;
}

/// Every event of a stream request through the gateway.
SseResult stream(int port, const std::string& body) {
  auto s = StreamingResponse::open(port, "POST", "/v1/chat/completions", body,
                                   {{"Content-Type", "application/json"}});
  EXPECT_EQ(s->status(), 200);
  return read_sse(*s);
}

bool has_usage_chunk(const SseResult& r) {
  for (const auto& e : r.events) {
    if (e.data == "[DONE]") continue;
    const auto v = parse_json(e.data);
    if (v.is_object() && v.as_object().contains("usage") && v.at("usage").is_object()) return true;
  }
  return false;
}

std::string sim_gateway_yaml(int p1, int p2, const std::string& extra = "") {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("sim1", p1) +
         backend_line("sim2", p2) +
         "routes:\n  - {name: chat, match: {path: /v1/chat/completions}, backends: [sim1, sim2], "
         "policy: round_robin}\n  - {name: rest, backends: [sim1]}\n" +
         extra;
}

/// promtool: on the PATH, or where scripts/setup puts it (its cache); "" when nowhere.
std::string find_promtool() {
  std::vector<std::string> where;
  if (const char* path = std::getenv("PATH")) {
    std::istringstream dirs(path);
    for (std::string d; std::getline(dirs, d, ':');) where.push_back(d + "/promtool");
  }
  const char* cache = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  if (cache && *cache) where.push_back(std::string(cache) + "/llmux/promtool/promtool");
  if (home && *home) where.push_back(std::string(home) + "/.cache/llmux/promtool/promtool");
  for (const auto& p : where)
    if (::access(p.c_str(), X_OK) == 0) return p;
  return "";
}

TEST(GatewayMetrics, CountsAKnownSequenceOfRequests) {
  SimServer s1({"--time-scale", "50", "--output-len", "fixed:7"});
  SimServer s2({"--time-scale", "50", "--output-len", "fixed:7"});
  auto gw = GatewayServer::with_config(sim_gateway_yaml(s1.port(), s2.port()));
  const int port = gw->port();
  // 3 plain answers, 2 streams that did not ask for usage, 1 model the backends do not serve.
  std::int64_t prompt = 0;  // the same prompt each time
  for (int i = 0; i < 3; ++i) {
    Response r = HttpClient(port).post("/v1/chat/completions", chat(false));
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(parse_json(r.body).at("usage").at("completion_tokens").as_int64(), kOutputTokens);
    prompt = parse_json(r.body).at("usage").at("prompt_tokens").as_int64();
  }
  ASSERT_GT(prompt, 0);
  for (int i = 0; i < 2; ++i) {
    const SseResult r = stream(port, chat(true));
    ASSERT_FALSE(r.events.empty());
    EXPECT_EQ(r.events.back().data, "[DONE]");
    EXPECT_FALSE(has_usage_chunk(r)) << "the client did not ask for usage:\n" << r.raw();
  }
  Response bad = HttpClient(port).post("/v1/chat/completions", chat(false, "", "made-up-model"));
  EXPECT_EQ(bad.status, 404) << bad.body;

  Response m = settled_metrics(port, 6);
  ASSERT_EQ(m.status, 200);
  EXPECT_NE(m.header("content-type").find("text/plain"), std::string::npos);
  EXPECT_EQ(m.header("x-llmux-backend"), "") << "answered by the gateway, never proxied";
  const auto all = samples(m.body);
  for (const auto& [family, type] : std::vector<std::pair<std::string, std::string>>{
           {"llmux_requests_total", "counter"},
           {"llmux_prompt_tokens_total", "counter"},
           {"llmux_generation_tokens_total", "counter"},
           {"llmux_cached_prompt_tokens_total", "counter"},
           {"llmux_request_retries_total", "counter"},
           {"llmux_backend_attempt_failures_total", "counter"},
           {"llmux_backend_ejections_total", "counter"},
           {"llmux_backend_inflight_requests", "gauge"},
           {"llmux_route_queued_requests", "gauge"},
           {"llmux_backend_up", "gauge"},
           {"llmux_time_to_first_token_seconds", "histogram"},
           {"llmux_inter_token_latency_seconds", "histogram"},
           {"llmux_request_duration_seconds", "histogram"},
           {"llmux_gateway_request_overhead_seconds", "histogram"},
           {"llmux_gateway_relay_overhead_seconds", "histogram"}})
    EXPECT_EQ(type_of(m.body, family), type) << family;

  EXPECT_EQ(sum_of(all, "llmux_requests_total", {{"route", "chat"}, {"code", "200"}}), 5);
  EXPECT_EQ(sum_of(all, "llmux_requests_total", {{"route", "chat"}, {"code", "404"}}), 1);
  EXPECT_EQ(sum_of(all, "llmux_requests_total", {{"backend", "sim1"}}) +
                sum_of(all, "llmux_requests_total", {{"backend", "sim2"}}),
            6);
  // Round robin over two: three requests each.
  EXPECT_EQ(sum_of(all, "llmux_requests_total", {{"backend", "sim1"}}), 3);
  // Every answer's tokens, the streams' included (their usage was asked for upstream).
  EXPECT_EQ(sum_of(all, "llmux_generation_tokens_total", {{"model", "Qwen3.6-35B-A3B"}}),
            5 * kOutputTokens);
  EXPECT_EQ(sum_of(all, "llmux_stream_usage_requested_total", {{"route", "chat"}}), 2);
  // Prompt tokens come only from usage: the streams' count because it was asked for upstream.
  EXPECT_EQ(sum_of(all, "llmux_prompt_tokens_total", {{"model", "Qwen3.6-35B-A3B"}}), 5 * prompt);
  // A model no backend serves never becomes a label.
  EXPECT_EQ(m.body.find("made-up-model"), std::string::npos);
  // Histograms: one TTFT per stream, one duration per relayed answer.
  EXPECT_EQ(sum_of(all, "llmux_time_to_first_token_seconds_count"), 2);
  EXPECT_EQ(sum_of(all, "llmux_request_duration_seconds_count"), 6);
  const double itl = sum_of(all, "llmux_inter_token_latency_seconds_count");
  EXPECT_GE(itl, 2 * (kOutputTokens - 2));
  EXPECT_LE(itl, 2 * kOutputTokens);
  EXPECT_EQ(sum_of(all, "llmux_time_to_first_token_seconds_bucket", {{"le", "+Inf"}}), 2);
  EXPECT_EQ(sum_of(all, "llmux_gateway_request_overhead_seconds_count"), 6);
  EXPECT_GE(sum_of(all, "llmux_gateway_relay_overhead_seconds_count"), 6);
  EXPECT_EQ(sum_of(all, "llmux_backend_inflight_requests"), 0);
  EXPECT_EQ(sum_of(all, "llmux_backend_up", {{"backend", "sim2"}}), 1);

  // promtool, the Prometheus project's own linter, accepts it.
  const std::string file = gw->dir_path("metrics.txt");
  std::ofstream(file) << m.body;
  gw->expect_clean_exit();
  const std::string promtool = find_promtool();
  if (promtool.empty()) GTEST_SKIP() << "no promtool (scripts/setup fetches one)";
  RunResult lint =
      run_to_completion({"/bin/sh", "-c", promtool + " check metrics < '" + file + "'"}, 20s);
  EXPECT_EQ(lint.exit_code, 0) << lint.out << lint.err;
}

TEST(GatewayMetrics, UsageAskedUpstreamOnlyWhenTheClientDidNot) {
  GatedBackend echo({});
  auto gw =
      GatewayServer::with_config(one_route_config(1, backend_line("echo", echo.port()), "echo"));
  auto upstream_body = [&](const std::string& body) {
    Response r = HttpClient(gw->port()).post("/v1/chat/completions", body);
    EXPECT_EQ(r.status, 200) << r.body;
    return parse_json(str(parse_json(r.body).at("body")));
  };
  // No stream_options: asked, every other field as the client sent it.
  auto b = upstream_body(chat(true, R"(,"temperature":0.5)"));
  EXPECT_TRUE(b.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(b.at("temperature").as_double(), 0.5);
  EXPECT_EQ(str(b.at("messages").at(0).at("content")), "hello there");
  // A body far larger than the socket buffers (4 MiB), both forms: every byte arrives, in order,
  // under a Content-Length that matches what was sent.
  std::string big(4u << 20, 'x');
  for (std::size_t i = 0; i < big.size(); i += 4096)
    big[i] = static_cast<char>('a' + (i / 4096) % 26);
  for (const std::string& extra : {std::string(), std::string(R"(,"stream_options":{"x":2})")}) {
    const std::string body =
        R"({"model":"m","stream":true,"messages":[{"role":"user","content":")" + big + "\"}]" +
        extra + "}";
    Response r = HttpClient(gw->port(), 30s).post("/v1/chat/completions", body);
    ASSERT_EQ(r.status, 200) << r.body.substr(0, 300);
    const auto echo_obj = parse_json(r.body);
    const std::string sent = str(echo_obj.at("body"));
    EXPECT_EQ(std::to_string(sent.size()), str(echo_obj.at("headers").at("content-length")));
    const auto v = parse_json(sent);
    EXPECT_TRUE(v.at("stream_options").at("include_usage").as_bool());
    EXPECT_TRUE(str(v.at("messages").at(0).at("content")) == big) << "the prompt arrived changed";
  }
  // stream_options without include_usage (or false): set, the client's other options kept.
  b = upstream_body(chat(true, R"(,"stream_options":{"include_usage":false,"x":1})"));
  EXPECT_TRUE(b.at("stream_options").at("include_usage").as_bool());
  EXPECT_EQ(b.at("stream_options").at("x").as_int64(), 1);
  // Not a stream, or asked already: the body goes unchanged.
  EXPECT_FALSE(upstream_body(chat(false)).as_object().contains("stream_options"));
  const std::string asked = chat(true, R"(,"stream_options":{"include_usage":true})");
  Response r = HttpClient(gw->port()).post("/v1/chat/completions", asked);
  EXPECT_EQ(str(parse_json(r.body).at("body")), asked);
  gw->expect_clean_exit();
}

TEST(GatewayMetrics, StreamUsageOffLeavesTheBodyAndCountsNothing) {
  SimServer s1({"--time-scale", "50", "--output-len", "fixed:7"});
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("sim1", s1.port()), "sim1",
                                                        "metrics: {stream_usage: false}\n"));
  const SseResult r = stream(gw->port(), chat(true));
  EXPECT_FALSE(has_usage_chunk(r));
  // The client that asks still gets its usage chunk, and the gateway counts it.
  const SseResult asked =
      stream(gw->port(), chat(true, R"(,"stream_options":{"include_usage":true})"));
  EXPECT_TRUE(has_usage_chunk(asked)) << asked.raw();
  std::int64_t prompt = 0;
  for (const auto& e : asked.events) {
    if (e.data.find("\"usage\"") == std::string::npos || e.data == "[DONE]") continue;
    const auto v = parse_json(e.data);
    if (v.as_object().contains("usage") && v.at("usage").is_object())
      prompt = v.at("usage").at("prompt_tokens").as_int64();
  }
  ASSERT_GT(prompt, 0);
  const auto all = samples(settled_metrics(gw->port(), 2).body);
  // Usage only for the stream that asked (the other's tokens are counted from its events).
  EXPECT_EQ(sum_of(all, "llmux_prompt_tokens_total"), prompt);
  EXPECT_EQ(sum_of(all, "llmux_stream_usage_requested_total"), 0);
  gw->expect_clean_exit();
}

TEST(GatewayMetrics, OffMeansRoutedLikeAnyOtherPath) {
  SimServer s1({"--time-scale", "50", "--output-len", "fixed:7"});
  auto gw = GatewayServer::with_config(
      one_route_config(1, backend_line("sim1", s1.port()), "sim1", "metrics: {enabled: false}\n"));
  stream(gw->port(), chat(true));
  Response m = HttpClient(gw->port()).get("/metrics");
  EXPECT_EQ(m.status, 200);
  EXPECT_EQ(m.header("x-llmux-backend"), "sim1") << "the backend's own metrics";
  EXPECT_EQ(m.body.find("llmux_requests_total"), std::string::npos);
  gw->expect_clean_exit();
}

TEST(GatewayMetrics, OwnPortAndDashboardData) {
  SimServer s1({"--time-scale", "50", "--output-len", "fixed:7"});
  SimServer s2({"--time-scale", "50", "--output-len", "fixed:7"});
  auto gw = GatewayServer::with_config(
      sim_gateway_yaml(s1.port(), s2.port(), "metrics: {listen: \"127.0.0.1:0\"}\n"));
  const auto ready = parse_json(gw->ready_line());
  ASSERT_TRUE(ready.as_object().contains("metrics_port")) << gw->ready_line();
  const int mport = static_cast<int>(ready.at("metrics_port").as_int64());
  for (int i = 0; i < 2; ++i) stream(gw->port(), chat(true));
  // The main port no longer answers /metrics (and does not proxy it either).
  Response main = HttpClient(gw->port()).get("/metrics");
  EXPECT_EQ(main.status, 404);
  EXPECT_TRUE(is_openai_error(main.body, 404));
  Response m = settled_metrics(mport, 2);
  ASSERT_EQ(m.status, 200);
  EXPECT_EQ(sum_of(samples(m.body), "llmux_requests_total"), 2);
  // The metrics port answers nothing else.
  EXPECT_EQ(HttpClient(mport).post("/v1/chat/completions", chat(false)).status, 404);
  // The dashboard and its data.
  Response page = HttpClient(mport).get("/dashboard/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.header("content-type").find("text/html"), std::string::npos);
  EXPECT_EQ(HttpClient(mport).get("/dashboard").status, 301);
  Response data = HttpClient(mport).get("/dashboard/data");
  ASSERT_EQ(data.status, 200);
  const auto d = parse_json(data.body);
  ASSERT_EQ(d.at("backends").as_array().size(), 2u);
  std::int64_t tokens = 0, ttft = 0;
  for (const auto& b : d.at("backends").as_array()) {
    EXPECT_EQ(str(b.at("state")), "up");
    tokens += b.at("generation_tokens").as_int64();
    ttft += b.at("ttft").at("count").as_int64();
    EXPECT_EQ(str(b.at("ttft").at("le").as_array().back()), "+Inf");
  }
  EXPECT_EQ(tokens, 2 * kOutputTokens);
  EXPECT_EQ(ttft, 2);
  EXPECT_EQ(str(d.at("routes").at(0).at("policy")), "round_robin");
  gw->expect_clean_exit();
}

// ---- admin API ----

TEST(GatewayAdmin, OffWithoutATokenAndRefusedWithoutTheRightOne) {
  SimServer s1({"--time-scale", "50"});
  {
    auto gw =
        GatewayServer::with_config(one_route_config(1, backend_line("sim1", s1.port()), "sim1"));
    Response r = HttpClient(gw->port()).get("/admin/backends", kAuth);
    EXPECT_EQ(r.status, 404);
    EXPECT_NE(error_message(r.body).find("admin.token"), std::string::npos) << r.body;
    gw->expect_clean_exit();
  }
  auto gw = GatewayServer::with_config(one_route_config(1, backend_line("sim1", s1.port()), "sim1",
                                                        "admin: {token: \"" + kToken + "\"}\n"));
  for (const Headers& h :
       {Headers{}, Headers{{"Authorization", "Bearer wrong-token-0123456789abc"}},
        Headers{{"Authorization", "Bearer " + kToken + "x"}},
        Headers{{"Authorization", "Basic " + kToken}}}) {
    Response r = HttpClient(gw->port()).get("/admin/backends", h);
    EXPECT_EQ(r.status, 401);
    EXPECT_TRUE(is_openai_error(r.body, 401)) << r.body;
    Response d = HttpClient(gw->port()).post("/admin/backends/sim1/drain", "", h);
    EXPECT_EQ(d.status, 401);
  }
  // Nothing was drained by the refused calls.
  Response ok = HttpClient(gw->port()).get("/admin/backends", kAuth);
  ASSERT_EQ(ok.status, 200);
  EXPECT_FALSE(parse_json(ok.body).at("backends").at(0).at("draining").as_bool());
  EXPECT_EQ(HttpClient(gw->port()).get("/admin/config", kAuth).status, 200);
  EXPECT_EQ(HttpClient(gw->port()).get("/admin/nothing", kAuth).status, 404);
  gw->expect_clean_exit();
}

std::string served_by(int port) {
  Response r = HttpClient(port).post("/v1/chat/completions", chat(false));
  EXPECT_EQ(r.status, 200) << r.body;
  return r.header("x-llmux-backend");
}

TEST(GatewayAdmin, DrainHonouredAndAReloadReplacesIt) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto gw =
      GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" +
                                 backend_line("sim1", s1.port()) + backend_line("sim2", s2.port()) +
                                 "routes:\n  - {name: all, backends: [sim1, sim2], policy: first}\n"
                                 "admin: {token: \"" +
                                 kToken + "\"}\n");
  const int port = gw->port();
  EXPECT_EQ(served_by(port), "sim1");
  Response d = HttpClient(port).post("/admin/backends/sim1/drain", "", kAuth);
  ASSERT_EQ(d.status, 200) << d.body;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(served_by(port), "sim2") << "sim1 is drained";
  const auto all = samples(HttpClient(port).get("/metrics").body);
  EXPECT_EQ(sum_of(all, "llmux_backend_draining", {{"backend", "sim1"}}), 1);
  ASSERT_EQ(HttpClient(port).post("/admin/backends/sim1/undrain", "", kAuth).status, 200);
  EXPECT_EQ(served_by(port), "sim1");
  // Drained again, then a reload: the file's configuration replaces the run-time change.
  ASSERT_EQ(HttpClient(port).post("/admin/backends/sim1/drain", "", kAuth).status, 200);
  EXPECT_EQ(served_by(port), "sim2");
  ASSERT_EQ(::kill(gw->pid(), SIGHUP), 0);
  EXPECT_TRUE(poll_until([&] { return served_by(port) == "sim1"; }, 5s));
  EXPECT_TRUE(poll_until(
      [&] {
        const std::string err = gw->stderr_text();
        return err.find("replaced") != std::string::npos &&
               err.find("backend sim1 drained") != std::string::npos;
      },
      5s))
      << gw->stderr_text();
  EXPECT_EQ(HttpClient(port).post("/admin/backends/nobody/drain", "", kAuth).status, 404);
  gw->expect_clean_exit();
}

TEST(GatewayAdmin, AddAndRemoveBackendsWithoutDroppingStreams) {
  // sim2 streams slowly: 60 tokens at the seed's speed over 2 = about 0.6 s.
  SimServer s1({"--time-scale", "50", "--output-len", "fixed:7"});
  SimServer s2({"--time-scale", "2", "--output-len", "fixed:60"});
  SimServer s3({"--time-scale", "50", "--output-len", "fixed:7"});
  auto gw =
      GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" +
                                 backend_line("sim2", s2.port()) + backend_line("sim1", s1.port()) +
                                 "routes:\n  - {name: all, backends: [sim2, sim1], policy: first}\n"
                                 "admin: {token: \"" +
                                 kToken + "\"}\n");
  const int port = gw->port();
  auto s = StreamingResponse::open(port, "POST", "/v1/chat/completions", chat(true));
  ASSERT_EQ(s->status(), 200);
  EXPECT_EQ(s->header("x-llmux-backend"), "sim2");
  const SseResult first = read_sse(*s, 2);
  ASSERT_EQ(first.events.size(), 2u);
  // Removed while its stream runs: the stream goes on to its end.
  Response del = HttpClient(port).request("DELETE", "/admin/backends/sim2", "", kAuth);
  ASSERT_EQ(del.status, 200) << del.body;
  EXPECT_EQ(served_by(port), "sim1");
  const SseResult rest = read_sse(*s);
  EXPECT_EQ(rest.end, ReadStatus::End);
  ASSERT_FALSE(rest.events.empty());
  EXPECT_EQ(rest.events.back().data, "[DONE]");
  // Removing the last backend of a route is refused.
  EXPECT_EQ(HttpClient(port).request("DELETE", "/admin/backends/sim1", "", kAuth).status, 409);
  // Added: sim3 takes its share at once.
  const std::string add = R"({"name":"sim3","url":"http://127.0.0.1:)" + std::to_string(s3.port()) +
                          R"(","routes":["all"]})";
  Response a = HttpClient(port).post("/admin/backends", add, kAuth);
  ASSERT_EQ(a.status, 201) << a.body;
  ASSERT_EQ(HttpClient(port).post("/admin/backends/sim1/drain", "", kAuth).status, 200);
  EXPECT_EQ(served_by(port), "sim3");
  // Bad additions say why.
  EXPECT_EQ(HttpClient(port).post("/admin/backends", add, kAuth).status, 409);
  Response bad =
      HttpClient(port).post("/admin/backends", R"({"name":"x","url":"127.0.0.1:1"})", kAuth);
  EXPECT_EQ(bad.status, 400);
  EXPECT_TRUE(is_openai_error(bad.body, 400)) << bad.body;
  EXPECT_EQ(HttpClient(port).post("/admin/backends", "{", kAuth).status, 400);
  const std::string err = gw->stderr_text();
  EXPECT_NE(err.find("backend sim2 removed"), std::string::npos) << err;
  EXPECT_NE(err.find("backend sim3"), std::string::npos) << err;
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
