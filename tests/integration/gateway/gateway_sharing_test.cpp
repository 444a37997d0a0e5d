// SPDX-License-Identifier: Apache-2.0
// Sharing the machines (issue 38): a request's tenant and priority class from its key or its
// headers, each bad value a clear 400 (or 403), a class above its key's cap served at the cap;
// in a saturated route's queue a higher class goes first, a tenant holds at most max_queued
// places (429 naming its limit), and a lower class fills only its share of a backend's slots.
// Queued requests are seen through GET /health's `queued`, never guessed with sleeps.
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <future>
#include <memory>
#include <string>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

const std::string kBody = R"({"model":"m","stream":true,"messages":[]})";

std::string config(int port, int max_inflight, const std::string& extra = "") {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\nqueue: {size: 16, timeout: 20s}\nbackends:\n" +
         backend_line("be", port, ", max_inflight: " + std::to_string(max_inflight)) +
         "routes:\n  - {name: all, backends: [be]}\n" + extra;
}

int queued(int gw_port) {
  Response r = HttpClient(gw_port).get("/health");
  return static_cast<int>(parse_json(r.body).at("routes").at(0).at("queued").as_int64());
}

std::unique_ptr<StreamingResponse> open_stream(int port, const std::string& id,
                                               const Headers& headers) {
  Headers all = headers;
  all.push_back({"x-request-id", "s" + id});
  return StreamingResponse::open(port, "POST", "/v1/chat/completions?n=" + id, kBody, all, 20s);
}

void finish(GatedBackend& be, StreamingResponse& s) {
  be.release(2);
  SseResult r = read_sse(s, SIZE_MAX, 5s, 10s);
  EXPECT_EQ(r.end, ReadStatus::End) << r.raw();
}

TEST(GatewaySharing, BadTenantAndPriorityHeadersAre400NamingTheClasses) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(config(be.port(), 0));
  HttpClient client(gw->port());
  std::string why;

  Response unknown = client.post("/v1/chat/completions", kBody, {{"X-Llmux-Priority", "urgent"}});
  EXPECT_EQ(unknown.status, 400) << unknown.body;
  EXPECT_TRUE(is_openai_error(unknown.body, 400, &why)) << why;
  EXPECT_NE(unknown.body.find("interactive, default, batch"), std::string::npos) << unknown.body;

  Response malformed =
      client.post("/v1/chat/completions", kBody, {{"X-Llmux-Priority", "batch please"}});
  EXPECT_EQ(malformed.status, 400) << malformed.body;
  EXPECT_NE(malformed.body.find("Malformed X-Llmux-Priority"), std::string::npos) << malformed.body;

  Response tenant = client.post("/v1/chat/completions", kBody, {{"X-Llmux-Tenant", "a/b"}});
  EXPECT_EQ(tenant.status, 400) << tenant.body;
  EXPECT_NE(tenant.body.find("Malformed X-Llmux-Tenant"), std::string::npos) << tenant.body;
  EXPECT_TRUE(be.requests().empty()) << "a refused request reached the backend";

  // A good one goes through; the access log names its tenant and class.
  Response ok = client.post(
      "/v1/chat/completions", kBody,
      {{"X-Llmux-Tenant", "eval-team"}, {"X-Llmux-Priority", "batch"}, {"x-request-id", "good-1"}});
  EXPECT_EQ(ok.status, 200) << ok.body;
  const auto record = gw->wait_access_record("good-1", 5s);
  EXPECT_EQ(record.at("tenant").as_string(), "eval-team");
  EXPECT_EQ(record.at("priority").as_string(), "batch");
  gw->expect_clean_exit();
}

TEST(GatewaySharing, InvalidSharingIsAnErrorNamingTheFieldAtCheckAndAtReload) {
  GatedBackend be({GatedBackend::Mode::Echo});
  const std::string bad =
      config(be.port(), 0,
             "tenants: {weights: {alice: 0}}\n"
             "priorities:\n"
             "  default: normal\n"
             "  classes: [{name: high, max_share: 0.5}, {name: low, max_share: 0.9}]\n");
  TempDir dir;
  RunResult check = run_gateway({"--check", "--config", dir.write("bad.yaml", bad)});
  ASSERT_FALSE(check.timed_out);
  EXPECT_NE(check.exit_code, 0) << check.out << check.err;
  const std::string report = check.out + check.err;
  for (const char* field :
       {"tenants.weights.alice", "priorities.classes[1].max_share", "priorities.default"})
    EXPECT_NE(report.find(field), std::string::npos) << field << " in:\n" << report;

  auto gw = GatewayServer::with_config(config(be.port(), 0));
  gw->rewrite_config(bad);
  ASSERT_EQ(::kill(gw->pid(), SIGHUP), 0);
  EXPECT_TRUE(poll_until(
      [&] {
        return gw->stderr_text().find("priorities.classes[1].max_share") != std::string::npos;
      },
      5s))
      << gw->stderr_text();
  EXPECT_NE(gw->stderr_text().find("reload: the new configuration is invalid"), std::string::npos);
  // The old configuration still serves: its classes are the default ones.
  Response still =
      HttpClient(gw->port()).post("/v1/chat/completions", kBody, {{"X-Llmux-Priority", "batch"}});
  EXPECT_EQ(still.status, 200) << still.body;
  gw->expect_clean_exit();
}

TEST(GatewaySharing, AClassAboveTheKeysCapIsServedAtTheCapOrRefusedWhenConfigured) {
  GatedBackend be({GatedBackend::Mode::Echo});
  const std::string keys =
      "auth:\n  keys:\n"
      "    - {name: ci, key: sk-ci-000001, priority: batch, max_priority: default}\n";
  {
    auto gw = GatewayServer::with_config(config(be.port(), 0, keys));
    HttpClient client(gw->port());
    Response capped = client.post("/v1/chat/completions", kBody,
                                  {{"Authorization", "Bearer sk-ci-000001"},
                                   {"X-Llmux-Priority", "interactive"},
                                   {"X-Llmux-Tenant", "someone-else"},
                                   {"x-request-id", "capped-1"}});
    EXPECT_EQ(capped.status, 200) << capped.body;
    const auto record = gw->wait_access_record("capped-1", 5s);
    EXPECT_EQ(record.at("priority").as_string(), "default");
    EXPECT_EQ(record.at("tenant").as_string(), "ci") << "the key names the tenant, not a header";
    EXPECT_TRUE(poll_until(
        [&] { return gw->stderr_text().find("served as 'default'") != std::string::npos; }, 5s))
        << gw->stderr_text();
    // No header: the key's own class.
    Response plain =
        client.post("/v1/chat/completions", kBody,
                    {{"Authorization", "Bearer sk-ci-000001"}, {"x-request-id", "plain-1"}});
    EXPECT_EQ(plain.status, 200) << plain.body;
    EXPECT_EQ(gw->wait_access_record("plain-1", 5s).at("priority").as_string(), "batch");
    gw->expect_clean_exit();
  }
  auto gw = GatewayServer::with_config(
      config(be.port(), 0, keys + "priorities: {refuse_above_key_cap: true}\n"));
  Response refused =
      HttpClient(gw->port())
          .post("/v1/chat/completions", kBody,
                {{"Authorization", "Bearer sk-ci-000001"}, {"X-Llmux-Priority", "interactive"}});
  EXPECT_EQ(refused.status, 403) << refused.body;
  std::string why;
  EXPECT_TRUE(is_openai_error(refused.body, 403, &why)) << why;
  EXPECT_NE(refused.body.find("at most 'default'"), std::string::npos) << refused.body;
  gw->expect_clean_exit();
}

TEST(GatewaySharing, AHigherClassGoesFirstAndATenantHoldsAtMostMaxQueuedPlaces) {
  GatedBackend be({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(config(be.port(), 1, "tenants: {max_queued: 1}\n"));
  const int port = gw->port();
  auto first = open_stream(port, "0", {});
  ASSERT_EQ(first->status(), 200);
  auto batch = std::async(std::launch::async, [&] {
    return open_stream(port, "1", {{"X-Llmux-Tenant", "nightly"}, {"X-Llmux-Priority", "batch"}});
  });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 1; }, 5s));
  // nightly holds its one place: its next request is refused, naming the limit.
  Response over =
      HttpClient(port).post("/v1/chat/completions?n=x", kBody,
                            {{"X-Llmux-Tenant", "nightly"}, {"X-Llmux-Priority", "batch"}});
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(over.header("retry-after"), "1");
  EXPECT_NE(over.body.find("tenant 'nightly'"), std::string::npos) << over.body;
  EXPECT_NE(over.body.find("tenants.max_queued"), std::string::npos) << over.body;
  // An interactive request of another tenant joins after the batch one and goes before it.
  auto interactive = std::async(std::launch::async, [&] {
    return open_stream(port, "2",
                       {{"X-Llmux-Tenant", "alice"}, {"X-Llmux-Priority", "interactive"}});
  });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 2; }, 5s));
  finish(be, *first);
  auto second = interactive.get();
  ASSERT_EQ(second->status(), 200);
  ASSERT_TRUE(be.wait_requests(2, 5s));
  EXPECT_EQ(be.requests()[1].target, "/v1/chat/completions?n=2");
  finish(be, *second);
  auto third = batch.get();
  ASSERT_EQ(third->status(), 200);
  ASSERT_TRUE(be.wait_requests(3, 5s));
  EXPECT_EQ(be.requests()[2].target, "/v1/chat/completions?n=1");
  finish(be, *third);
  gw->expect_clean_exit();
}

TEST(GatewaySharing, ALowerClassFillsOnlyItsShareOfABackendsSlots) {
  // max_inflight 2, batch's default max_share 0.5: batch holds one slot, the other is kept.
  GatedBackend be({GatedBackend::Mode::GatedSse, 1});
  auto gw = GatewayServer::with_config(config(be.port(), 2));
  const int port = gw->port();
  const Headers batch_headers{{"X-Llmux-Priority", "batch"}};
  auto first = open_stream(port, "0", batch_headers);
  ASSERT_EQ(first->status(), 200);
  auto second =
      std::async(std::launch::async, [&] { return open_stream(port, "1", batch_headers); });
  ASSERT_TRUE(poll_until([&] { return queued(port) == 1; }, 5s))
      << "the second batch request took the slot kept for higher classes";
  // The kept slot serves a default-class request (which joins the queue, ahead of batch).
  auto plain = open_stream(port, "2", {});
  ASSERT_EQ(plain->status(), 200);
  ASSERT_TRUE(be.wait_requests(2, 5s));
  EXPECT_EQ(be.requests()[1].target, "/v1/chat/completions?n=2");
  EXPECT_EQ(queued(port), 1) << "the second batch request still waits";
  // Every stream's events at once (an event and [DONE] each): the backend hands them out in
  // the order its connections ask, and the batch request that waited may start (and ask) as soon
  // as a running stream ends, before the other one has read its last.
  be.release(6);
  for (StreamingResponse* running : {plain.get(), first.get()}) {
    SseResult r = read_sse(*running, SIZE_MAX, 5s, 10s);
    EXPECT_EQ(r.end, ReadStatus::End) << r.raw();
  }
  auto later = second.get();
  ASSERT_EQ(later->status(), 200);
  SseResult last = read_sse(*later, SIZE_MAX, 5s, 10s);
  EXPECT_EQ(last.end, ReadStatus::End) << last.raw();
  gw->expect_clean_exit();
}

TEST(GatewaySharing, ABackendWithSendPriorityGetsTheClassAsVllmsPriority) {
  GatedBackend plain({GatedBackend::Mode::Echo});
  GatedBackend vllm({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 1\nbackends:\n" + backend_line("plain", plain.port(), "") +
      backend_line("vllm", vllm.port(), ", send_priority: true") +
      "routes:\n  - {name: a, match: {path: /v1/completions}, backends: [plain]}\n"
      "  - {name: b, backends: [vllm]}\n");
  HttpClient client(gw->port());
  const std::string body = R"({"model":"m","priority":-100,"messages":[]})";
  auto priority_sent = [&](const Headers& headers) {
    Response r = client.post("/v1/chat/completions", body, headers);
    EXPECT_EQ(r.status, 200) << r.body;
    const auto echoed = parse_json(parse_json(r.body).at("body").as_string());
    return echoed.at("priority").as_int64();
  };
  EXPECT_EQ(priority_sent({{"X-Llmux-Priority", "interactive"}}), -1);
  EXPECT_EQ(priority_sent({}), 0) << "the default class is vLLM's 0";
  EXPECT_EQ(priority_sent({{"X-Llmux-Priority", "batch"}}), 1);
  // A body far larger than the socket buffers goes whole, priority first, nothing lost.
  const std::string big_content(2 << 20, 'x');
  const std::string big =
      R"({"model":"m","messages":[{"role":"user","content":")" + big_content + R"("}]})";
  Response large = client.post("/v1/chat/completions", big, {{"X-Llmux-Priority", "batch"}});
  ASSERT_EQ(large.status, 200) << large.body.substr(0, 200);
  const auto echoed = parse_json(parse_json(large.body).at("body").as_string()).as_object();
  EXPECT_EQ(echoed.at("priority").as_int64(), 1);
  EXPECT_EQ(echoed.at("messages").as_array()[0].as_object().at("content").as_string().size(),
            big_content.size());
  // A backend without send_priority gets the client's body as it was.
  Response r = client.post("/v1/completions", body, {{"X-Llmux-Priority", "batch"}});
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(parse_json(r.body).at("body").as_string(), body);
  gw->expect_clean_exit();
}

/// The value of the /metrics line that starts with `series` (its name and labels), -1 if none.
double metric_value(const std::string& text, const std::string& series) {
  const std::size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  const std::size_t value = at + 1 + series.size() + 1;
  return std::stod(text.substr(value, text.find('\n', value) - value));
}

TEST(GatewaySharing, MetricsAndTheDashboardShowEachTenantAndClass) {
  SimServer sim({"--zero-cost"});
  auto gw = GatewayServer::with_config("listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" +
                                       backend_line("sim", sim.port(), ", max_inflight: 4") +
                                       "routes:\n  - {name: all, backends: [sim]}\n");
  HttpClient client(gw->port());
  const std::string body = R"({"model":"Qwen3.6-35B-A3B","max_tokens":7,"ignore_eos":true,)"
                           R"("messages":[{"role":"user","content":"hello there"}]})";
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(client
                  .post("/v1/chat/completions", body,
                        {{"X-Llmux-Tenant", "eval-team"}, {"X-Llmux-Priority", "batch"}})
                  .status,
              200);
  EXPECT_EQ(client.post("/v1/chat/completions", body).status, 200);
  const std::string text = client.get("/metrics").body;
  EXPECT_EQ(metric_value(text, R"(llmux_tenant_requests_total{tenant="eval-team",class="batch"})"),
            3)
      << text;
  EXPECT_EQ(
      metric_value(text, R"(llmux_tenant_requests_total{tenant="anonymous",class="default"})"), 1);
  EXPECT_EQ(
      metric_value(
          text, R"(llmux_tenant_tokens_total{tenant="eval-team",class="batch",kind="completion"})"),
      21)
      << "three answers of 7 tokens";
  EXPECT_EQ(
      metric_value(text, R"(llmux_tenant_running_requests{tenant="eval-team",class="batch"})"), 0);
  EXPECT_EQ(metric_value(
                text, R"(llmux_tenant_queue_wait_seconds_count{tenant="eval-team",class="batch"})"),
            3);
  const auto data = parse_json(client.get("/dashboard/data").body).as_object();
  bool found = false;
  for (const auto& row : data.at("tenants").as_array()) {
    const auto& object = row.as_object();
    if (object.at("tenant") != "eval-team") continue;
    found = true;
    EXPECT_EQ(object.at("priority").as_string(), "batch");
    EXPECT_EQ(object.at("requests").to_number<int>(), 3);
    EXPECT_EQ(object.at("completion_tokens").to_number<int>(), 21);
  }
  EXPECT_TRUE(found) << data;
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
