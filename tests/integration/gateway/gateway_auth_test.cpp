// SPDX-License-Identifier: Apache-2.0
// Client API keys, per-key quotas and usage accounting in the gateway (issue 15, parts 3-5):
// a request needs a known key, the key is limited to its routes and models and never reaches a
// backend, its limits answer 429 with Retry-After, and the tokens its responses' usage reports
// are charged to it and listed by /admin/usage (JSON and CSV).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

constexpr const char* kAdminToken = "admin-token-0123456789";

Headers bearer(const std::string& key) {
  return {{"Authorization", "Bearer " + key}};
}

// The `code` of an OpenAI error body as OpenAI's own API gives it for auth and rate limits: a
// string ("invalid_api_key"), not the status; "" when the body is not such an error.
std::string code_of(const Response& r) {
  const json::value v = parse_json(r.body);
  const json::object* o =
      v.is_object()
          ? v.as_object().if_contains("error") ? &v.as_object().at("error").as_object() : nullptr
          : nullptr;
  if (!o || !o->contains("message") || !o->at("message").is_string() || !o->contains("type"))
    return {};
  const json::value* code = o->if_contains("code");
  return code && code->is_string() ? std::string(code->as_string()) : std::string();
}

// Two routes over one echo backend (which has no key of its own): `chat` and everything else.
std::string echo_config(int port, const std::string& keys, const std::string& extra = "") {
  return "listen: [{address: 127.0.0.1, port: 0}]\nthreads: 1\nbackends:\n" +
         backend_line("echo", port) +
         "routes:\n"
         "  - {name: chat, match: {path: /v1/chat/completions}, backends: [echo]}\n"
         "  - {name: rest, match: {path_prefix: /}, backends: [echo]}\n"
         "auth:\n  keys:\n" +
         keys + "admin: {token: " + kAdminToken + "}\n" + extra;
}

TEST(GatewayAuth, EveryRequestNeedsAKnownKeyWhichNeverReachesTheBackend) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      echo_config(be.port(),
                  "    - {name: alice, key: sk-alice-0001}\n"
                  "    - {name: bob, key: sk-bob-0002, models: [m1], routes: [chat]}\n"));
  HttpClient c(gw->port());
  const std::string body = R"({"model":"m1","messages":[]})";

  Response none = c.post("/v1/chat/completions", body);
  EXPECT_EQ(none.status, 401) << none.body;
  EXPECT_EQ(code_of(none), "invalid_api_key");
  EXPECT_NE(error_message(none.body).find("didn't provide an API key"), std::string::npos);

  Response wrong = c.post("/v1/chat/completions", body, bearer("sk-alice-0002"));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(code_of(wrong), "invalid_api_key");
  EXPECT_EQ(wrong.body.find("sk-alice"), std::string::npos) << "the key is never echoed";
  EXPECT_TRUE(be.requests().empty()) << "nothing refused reaches the backend";

  Response ok = c.post("/v1/chat/completions", body, bearer("sk-alice-0001"));
  ASSERT_EQ(ok.status, 200) << ok.body;
  const json::object echo = parse_json(ok.body).as_object();
  EXPECT_EQ(echoed_header(echo, "authorization"), "") << "the client's key is not forwarded";

  // bob: model m1 on route chat only.
  EXPECT_EQ(c.post("/v1/chat/completions", body, bearer("sk-bob-0002")).status, 200);
  Response other_model =
      c.post("/v1/chat/completions", R"({"model":"m2","messages":[]})", bearer("sk-bob-0002"));
  EXPECT_EQ(other_model.status, 403) << other_model.body;
  EXPECT_EQ(code_of(other_model), "permission_denied");
  Response other_route = c.post("/v1/completions", R"({"model":"m1"})", bearer("sk-bob-0002"));
  EXPECT_EQ(other_route.status, 403) << other_route.body;
  EXPECT_EQ(be.requests().size(), 2u) << "only the two admitted requests were sent";

  // The gateway's own endpoints need no key.
  EXPECT_EQ(c.get("/health/live").status, 200);
  EXPECT_EQ(c.get("/metrics").status, 200);

  // The access log names the key (never the key itself), refused requests included. (Its
  // lines are written every 100 ms.)
  std::vector<json::object> rec;
  for (int i = 0; i < 100 && rec.size() < 9; ++i) {
    std::this_thread::sleep_for(50ms);  // polling interval
    rec = gw->access_log();
  }
  int alice = 0, bob_refused = 0, anonymous_refused = 0;
  for (const auto& r : rec) {
    const std::string line = json::serialize(r);
    EXPECT_EQ(line.find("sk-"), std::string::npos) << line;
    const json::value* key = r.if_contains("key");
    const auto status = r.at("status").to_number<int>();
    if (key && key->as_string() == "alice" && status == 200) ++alice;
    if (key && key->as_string() == "bob" && status == 403) ++bob_refused;
    if (!key && status == 401) ++anonymous_refused;
  }
  EXPECT_EQ(alice, 1);
  EXPECT_EQ(bob_refused, 2);
  EXPECT_EQ(anonymous_refused, 2);
  gw->expect_clean_exit();
}

TEST(GatewayAuth, ABackendsOwnKeyIsSentInPlaceOfTheClients) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      "listen: [{address: 127.0.0.1, port: 0}]\nthreads: 1\nbackends:\n" +
      backend_line("echo", be.port(), ", api_key: backend-secret") +
      "routes: [{name: all, backends: [echo]}]\n"
      "auth: {keys: [{name: alice, key: sk-alice-0001}]}\n");
  HttpClient c(gw->port());
  Response r = c.post("/v1/completions", "{}", bearer("sk-alice-0001"));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(echoed_header(parse_json(r.body).as_object(), "authorization"),
            "Bearer backend-secret");
  gw->expect_clean_exit();
}

TEST(GatewayAuth, RequestsPerMinuteOverTheLimitAre429WithRetryAfter) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      echo_config(be.port(),
                  "    - {name: slow, key: sk-slow-0001, limits: {requests_per_minute: 3}}\n"
                  "    - {name: free, key: sk-free-0002}\n"));
  HttpClient c(gw->port());
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(c.post("/v1/completions", "{}", bearer("sk-slow-0001")).status, 200) << i;
  Response over = c.post("/v1/completions", "{}", bearer("sk-slow-0001"));
  EXPECT_EQ(over.status, 429) << over.body;
  EXPECT_EQ(code_of(over), "rate_limit_exceeded");
  ASSERT_TRUE(over.has_header("retry-after"));
  const int retry = std::stoi(over.header("retry-after"));
  EXPECT_GE(retry, 1);
  // The window slides over two clock minutes: room comes back within two of them.
  EXPECT_LE(retry, 120);
  // Another key is not held by this one's limit; the refused request reached no backend.
  EXPECT_EQ(c.post("/v1/completions", "{}", bearer("sk-free-0002")).status, 200);
  EXPECT_EQ(be.requests().size(), 4u);
  gw->expect_clean_exit();
}

TEST(GatewayAuth, ConcurrentRequestsOfAKeyAreLimitedWhileAStreamRuns) {
  GatedBackend::Options o{GatedBackend::Mode::GatedSse};
  o.sse_events = 2;
  GatedBackend be(o);
  auto gw = GatewayServer::with_config(
      "listen: [{address: 127.0.0.1, port: 0}]\nthreads: 1\nbackends:\n" +
      backend_line("sse", be.port()) +
      "routes: [{name: all, backends: [sse]}]\n"
      "auth: {keys: [{name: one, key: sk-one-0001, limits: {concurrent: 1}}]}\n");
  const std::string body = R"({"model":"m","prompt":"hi","stream":true})";
  auto first =
      StreamingResponse::open(gw->port(), "POST", "/v1/completions", body, bearer("sk-one-0001"));
  ASSERT_EQ(first->status(), 200);
  HttpClient c(gw->port());
  Response second = c.post("/v1/completions", body, bearer("sk-one-0001"));
  EXPECT_EQ(second.status, 429) << second.body;
  EXPECT_EQ(second.header("retry-after"), "1");
  // The stream ends: its slot is free again.
  be.release(3);
  Chunk chunk;
  ReadStatus st = ReadStatus::Data;
  for (int i = 0; i < 100 && st == ReadStatus::Data; ++i) st = first->read(chunk, 10s);
  ASSERT_EQ(st, ReadStatus::End);
  first.reset();
  be.release(3);  // the next stream's events
  // The slot is given back as the gateway ends the request, moments after the client has it.
  Response third;
  for (int i = 0; i < 50; ++i) {
    third = c.post("/v1/completions", body, bearer("sk-one-0001"));
    if (third.status != 429) break;
    std::this_thread::sleep_for(20ms);  // polling interval
  }
  EXPECT_EQ(third.status, 200) << third.body;
  gw->expect_clean_exit();
}

// The simulator reports usage: its tokens are charged to the key (tokens per minute) and listed
// by /admin/usage.
class GatewayUsage : public SimBehindGatewayTest {
 protected:
  void SetUp() override {
    sim_ = std::make_unique<SimServer>(
        std::vector<std::string>{"--time-scale", "100", "--served-model-name", "m"});
    gw_ = GatewayServer::with_config(
        "listen: [{address: 127.0.0.1, port: 0}]\nthreads: 1\nbackends:\n" +
        backend_line("sim", sim_->port()) +
        "routes: [{name: all, backends: [sim]}]\n"
        "auth:\n  keys:\n"
        "    - {name: carol, key: sk-carol-0001, limits: {tokens_per_minute: 100}}\n"
        "    - {name: dave, key: sk-dave-0002, models: [other]}\n"
        "admin: {token: " +
        std::string(kAdminToken) + "}\n");
  }
};

TEST_F(GatewayUsage, TokensAreChargedAndListedPerKeyAsJsonAndCsv) {
  HttpClient c(gw_->port());
  // Each answer reports its usage (prompt + completion): charged when it ends, until the key's
  // 100 tokens per minute are spent.
  // The window is the clock's minute: not so near its end that it turns over midway (the
  // previous minute's count then fades in the estimate).
  while (std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
                 .count() %
             60 >=
         55)
    std::this_thread::sleep_for(200ms);  // polling interval: the wall clock's next minute
  std::int64_t prompt = 0, completion = 0, before_last = 0;
  int admitted = 0;
  Response refused;
  for (int i = 0; i < 20; ++i) {
    Response r =
        c.post("/v1/completions", R"({"model":"m","prompt":"hello there","max_tokens":30})",
               bearer("sk-carol-0001"));
    if (r.status == 429) {
      refused = r;
      break;
    }
    ASSERT_EQ(r.status, 200) << r.body;
    ++admitted;
    before_last = prompt + completion;
    const json::object u = parse_json(r.body).as_object().at("usage").as_object();
    prompt += u.at("prompt_tokens").to_number<std::int64_t>();
    completion += u.at("completion_tokens").to_number<std::int64_t>();
  }
  ASSERT_EQ(refused.status, 429) << "tokens_per_minute never refused";
  EXPECT_GE(prompt + completion, 100) << "refused before the budget was spent";
  EXPECT_LT(before_last, 100) << "admitted after the budget was spent";
  EXPECT_GE(std::stoi(refused.header("retry-after")), 1);

  // The admin API lists what was charged: one row (this hour, carol, m, sim).
  const Headers admin = bearer(kAdminToken);
  EXPECT_EQ(c.get("/admin/usage?key=carol").status, 401) << "needs the admin token";
  Response j = c.get("/admin/usage?key=carol", admin);
  ASSERT_EQ(j.status, 200) << j.body;
  const json::object report = parse_json(j.body).as_object();
  const json::array& rows = report.at("data").as_array();
  ASSERT_EQ(rows.size(), 1u) << j.body;
  const json::object& row = rows[0].as_object();
  EXPECT_EQ(row.at("key").as_string(), "carol");
  EXPECT_EQ(row.at("model").as_string(), "m");
  EXPECT_EQ(row.at("backend").as_string(), "sim");
  EXPECT_EQ(row.at("requests").to_number<int>(), admitted);
  EXPECT_EQ(row.at("prompt_tokens").to_number<std::int64_t>(), prompt);
  EXPECT_EQ(row.at("completion_tokens").to_number<std::int64_t>(), completion);

  Response csv = c.get("/admin/usage?key=carol&format=csv", admin);
  ASSERT_EQ(csv.status, 200);
  EXPECT_NE(csv.header("content-type").find("text/csv"), std::string::npos);
  EXPECT_EQ(csv.body.substr(0, csv.body.find('\n')),
            "hour,key,model,backend,requests,prompt_tokens,cached_tokens,completion_tokens,"
            "total_tokens");
  EXPECT_NE(csv.body.find(",carol,m,sim," + std::to_string(admitted) + "," +
                          std::to_string(prompt) + ","),
            std::string::npos)
      << csv.body;

  // Another key has no rows; a range that ends before now has none either; bad input is a 400.
  EXPECT_EQ(parse_json(c.get("/admin/usage?key=dave", admin).body)
                .as_object()
                .at("data")
                .as_array()
                .size(),
            0u);
  EXPECT_EQ(parse_json(c.get("/admin/usage?to=2020-01-01", admin).body)
                .as_object()
                .at("data")
                .as_array()
                .size(),
            0u);
  Response bad = c.get("/admin/usage?from=yesterday", admin);
  EXPECT_EQ(bad.status, 400);
  std::string why;
  EXPECT_TRUE(is_openai_error(bad.body, 400, &why)) << why;
  EXPECT_EQ(c.get("/admin/usage?colour=red", admin).status, 400);
}

TEST_F(GatewayUsage, ModelListNeedsAKeyAndShowsOnlyItsModels) {
  HttpClient c(gw_->port());
  EXPECT_EQ(c.get("/v1/models").status, 401);
  Response all = c.get("/v1/models", bearer("sk-carol-0001"));
  ASSERT_EQ(all.status, 200) << all.body;
  const json::value all_json = parse_json(all.body);
  const json::array& carol = all_json.as_object().at("data").as_array();
  ASSERT_EQ(carol.size(), 1u);
  EXPECT_EQ(carol[0].as_object().at("id").as_string(), "m");
  Response limited = c.get("/v1/models", bearer("sk-dave-0002"));
  ASSERT_EQ(limited.status, 200);
  EXPECT_TRUE(parse_json(limited.body).as_object().at("data").as_array().empty())
      << "dave may use only 'other'";
}

}  // namespace
}  // namespace llmux::test
