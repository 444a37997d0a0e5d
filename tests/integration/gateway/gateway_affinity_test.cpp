// SPDX-License-Identifier: Apache-2.0
// Response affinity over the whole fleet (issue 11): every request naming a response —
// previous_response_id, GET /v1/responses/{id}, POST /v1/responses/{id}/cancel — reaches the
// backend that holds it, whether its id was learned from a JSON body or a stream's
// response.created; an id the gateway never learned (a restart, an eviction) is found by asking
// the backends; an id nowhere is vLLM's 404; an owner that is down is a 503 that says so; and a
// `store: false` response teaches nothing. Two simulators, a round_robin route: first turns
// spread, later turns follow.
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

struct Turn {
  int status = 0;
  std::string backend, id, body;
};

std::string turn_body(const std::string& prev, bool stream, bool store = true) {
  boost::json::object o{{"input", "tell me more"}, {"max_output_tokens", 8}, {"stream", stream}};
  if (!prev.empty()) o["previous_response_id"] = prev;
  if (!store) o["store"] = false;
  return boost::json::serialize(o);
}

/// One /v1/responses turn through the gateway; the id from the body or the response.created event.
Turn turn(int port, const std::string& prev, bool stream, bool store = true) {
  Turn t;
  const std::string body = turn_body(prev, stream, store);
  if (!stream) {
    Response r = HttpClient(port).post("/v1/responses", body);
    t.status = r.status;
    t.backend = r.header("x-llmux-backend");
    t.body = r.body;
    if (r.status == 200) t.id = std::string(parse_json(r.body).at("id").as_string());
    return t;
  }
  auto s = StreamingResponse::open(port, "POST", "/v1/responses", body);
  t.status = s->status();
  t.backend = s->header("x-llmux-backend");
  const SseResult r = read_sse(*s, SIZE_MAX, 5s, 20s);
  t.body = r.raw();
  for (const auto& e : r.events) {
    if (e.data.find("\"response.created\"") == std::string::npos) continue;
    t.id = std::string(parse_json(e.data).at("response").at("id").as_string());
    break;
  }
  return t;
}

std::string affinity_of(const GatewayServer& gw, const std::string& request_id) {
  auto rec = gw.wait_access_record(request_id, 5s);
  const auto* a = rec.if_contains("affinity");
  return a ? std::string(a->as_string()) : std::string();
}

std::string config(int p1, int p2, const std::string& extra = "") {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\nbackends:\n" + backend_line("s1", p1) +
         backend_line("s2", p2) +
         "routes:\n  - {name: responses, match: {path_prefix: /v1/responses}, backends: [s1, s2],"
         " policy: round_robin}\n  - {name: rest, backends: [s1, s2]}\n" +
         extra;
}

TEST(GatewayAffinity, ConversationsFollowTheirResponsesStreamingOrNot) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto gw = GatewayServer::with_config(config(s1.port(), s2.port()));
  std::map<std::string, int> first_turns;
  for (int c = 0; c < 6; ++c) {
    Turn t = turn(gw->port(), "", c % 2 == 0);
    ASSERT_EQ(t.status, 200) << t.body;
    ASSERT_FALSE(t.id.empty()) << t.body;
    const std::string home = t.backend;
    ++first_turns[home];
    for (int k = 1; k < 5; ++k) {
      // Streaming and not, in turn: ids learned from either kind of answer.
      t = turn(gw->port(), t.id, (c + k) % 2 == 0);
      ASSERT_EQ(t.status, 200) << "conversation " << c << " turn " << k << ": " << t.body;
      EXPECT_EQ(t.backend, home) << "conversation " << c << " turn " << k;
    }
  }
  EXPECT_EQ(first_turns["s1"], 3) << "first turns are the policy's: round robin";
  EXPECT_EQ(first_turns["s2"], 3);
  // The access log says how each later turn was placed (its last line may come just after the
  // client's answer).
  int known = 0, named = 0;
  for (const auto until = std::chrono::steady_clock::now() + 5s;
       named < 24 && std::chrono::steady_clock::now() < until;
       std::this_thread::sleep_for(20ms)) {  // polling interval, bounded by `until`
    known = named = 0;
    for (const auto& rec : gw->access_log()) {
      if (const auto* a = rec.if_contains("affinity")) {
        ++named;
        known += a->as_string() == "known";
      }
    }
  }
  EXPECT_EQ(named, 24);
  EXPECT_EQ(known, 24);
  gw->expect_clean_exit();
}

TEST(GatewayAffinity, GetAndCancelGoToTheOwner) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto gw = GatewayServer::with_config(config(s1.port(), s2.port()));
  std::map<std::string, std::string> owner;  // id -> backend
  for (int i = 0; i < 4; ++i) {
    Turn t = turn(gw->port(), "", false);
    ASSERT_EQ(t.status, 200);
    owner[t.id] = t.backend;
  }
  HttpClient http(gw->port());
  for (const auto& [id, backend] : owner) {
    for (int i = 0; i < 3; ++i) {
      Response r = http.get("/v1/responses/" + id);
      EXPECT_EQ(r.status, 200) << r.body;
      EXPECT_EQ(r.header("x-llmux-backend"), backend);
      EXPECT_EQ(std::string(parse_json(r.body).at("id").as_string()), id);
    }
    // A finished response cannot be cancelled; what matters is who was asked: the owner (the
    // other would say it does not know the id).
    Response c = http.post("/v1/responses/" + id + "/cancel", "");
    EXPECT_EQ(c.header("x-llmux-backend"), backend) << c.body;
    EXPECT_EQ(c.body.find("not found"), std::string::npos) << c.body;
  }
  gw->expect_clean_exit();
}

TEST(GatewayAffinity, AnIdNeverLearnedIsFoundByAskingAndOneNowhereIsVllmsNotFound) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  std::vector<Turn> first;
  {
    auto gw = GatewayServer::with_config(config(s1.port(), s2.port()));
    for (int i = 0; i < 4; ++i) first.push_back(turn(gw->port(), "", i % 2 == 0));
    gw->expect_clean_exit();
  }
  // A new gateway process: its table is empty.
  auto gw = GatewayServer::with_config(config(s1.port(), s2.port()));
  for (std::size_t i = 0; i < first.size(); ++i) {
    ASSERT_EQ(first[i].status, 200);
    HttpClient http(gw->port());
    const std::string rid = "found-" + std::to_string(i);
    Response r = http.post("/v1/responses", turn_body(first[i].id, false), {{"X-Request-Id", rid}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), first[i].backend);
    EXPECT_EQ(affinity_of(*gw, rid), "found");
    // Learned by asking: the next request naming it needs no asking.
    const std::string again = "again-" + std::to_string(i);
    r = http.get("/v1/responses/" + first[i].id, {{"X-Request-Id", again}});
    EXPECT_EQ(r.header("x-llmux-backend"), first[i].backend);
    EXPECT_EQ(affinity_of(*gw, again), "known");
  }
  HttpClient http(gw->port());
  Response r =
      http.post("/v1/responses", turn_body("resp_nowhere", false), {{"X-Request-Id", "nowhere"}});
  EXPECT_EQ(r.status, 404) << r.body;
  const auto err = parse_json(r.body).at("error").as_object();
  EXPECT_EQ(err.at("message").as_string(), "Response with id 'resp_nowhere' not found.");
  EXPECT_EQ(err.at("type").as_string(), "invalid_request_error");
  EXPECT_EQ(affinity_of(*gw, "nowhere"), "not_found");
  r = http.get("/v1/responses/resp_nowhere");
  EXPECT_EQ(r.status, 404) << r.body;
  // An id is the client's text: CR LF, spaces, slashes and a megabyte of it are looked for as
  // one (escaped) path segment, or not at all — never written raw into a request to a backend.
  for (const std::string& id : {std::string("resp_x\r\nX-Evil: 1\r\n\r\nGET / HTTP/1.1"),
                                std::string("a b/c?d#e%41"), std::string(1 << 20, 'r')}) {
    r = http.post("/v1/responses", turn_body(id, false));
    EXPECT_EQ(r.status, 404) << r.body.substr(0, 300);
    EXPECT_EQ(parse_json(r.body).at("error").at("type").as_string(), "invalid_request_error");
  }
  expect_serves(gw->port());
  gw->expect_clean_exit();
}

TEST(GatewayAffinity, EvictedIdsAreFoundByAsking) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  auto gw =
      GatewayServer::with_config(config(s1.port(), s2.port(), "affinity: {max_entries: 2}\n"));
  std::vector<Turn> turns;
  for (int i = 0; i < 4; ++i) turns.push_back(turn(gw->port(), "", false));
  HttpClient http(gw->port());
  // The table keeps the last two; the first two were evicted. (A GET learns its own id again,
  // so asking in this order finds 3 and 2 known, then 1 and 0 by asking.)
  for (int i = 3; i >= 0; --i) {
    const std::string rid = "evict-" + std::to_string(i);
    Response r = http.get("/v1/responses/" + turns[i].id, {{"X-Request-Id", rid}});
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), turns[i].backend) << i;
    EXPECT_EQ(affinity_of(*gw, rid), i >= 2 ? "known" : "found") << i;
  }
  // A later turn of an evicted conversation is served where it lives.
  Response r = http.post("/v1/responses", turn_body(turns[0].id, false));
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-llmux-backend"), turns[0].backend);
  gw->expect_clean_exit();
}

TEST(GatewayAffinity, AnOwnerThatIsDownIsA503SayingSo) {
  auto s1 = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "50"});
  SimServer s2({"--time-scale", "50"});
  auto gw = GatewayServer::with_config(config(s1->port(), s2.port()));
  Turn on1;
  for (int i = 0; i < 4 && on1.backend != "s1"; ++i) on1 = turn(gw->port(), "", false);
  ASSERT_EQ(on1.backend, "s1");
  s1.reset();  // the owner stops
  HttpClient http(gw->port());
  for (int i = 0; i < 2; ++i) {
    Response r = http.post("/v1/responses", turn_body(on1.id, false));
    EXPECT_EQ(r.status, 503) << r.body;
    const std::string msg(parse_json(r.body).at("error").at("message").as_string());
    EXPECT_NE(msg.find("'s1'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(on1.id), std::string::npos) << msg;
    EXPECT_FALSE(r.header("retry-after").empty());
  }
  // New conversations still start, on the backend that is up.
  Turn fresh = turn(gw->port(), "", false);
  EXPECT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_EQ(fresh.backend, "s2");
  gw->expect_clean_exit();
}

TEST(GatewayAffinity, StoreFalseTeachesNothingAndAffinityCanBeOff) {
  SimServer s1({"--time-scale", "50"}), s2({"--time-scale", "50"});
  {
    auto gw = GatewayServer::with_config(config(s1.port(), s2.port()));
    Turn t = turn(gw->port(), "", true, /*store=*/false);
    ASSERT_EQ(t.status, 200) << t.body;
    HttpClient http(gw->port());
    Response r = http.post("/v1/responses", turn_body(t.id, false), {{"X-Request-Id", "unstored"}});
    EXPECT_EQ(r.status, 404) << "the backend kept nothing: " << r.body;
    EXPECT_EQ(affinity_of(*gw, "unstored"), "not_found") << "asked, not known";
    gw->expect_clean_exit();
  }
  auto gw =
      GatewayServer::with_config(config(s1.port(), s2.port(), "affinity: {enabled: false}\n"));
  Turn t = turn(gw->port(), "", false);
  int not_found = 0;
  for (int i = 0; i < 4; ++i) not_found += turn(gw->port(), t.id, false).status == 404;
  EXPECT_EQ(not_found, 2) << "without affinity, round robin sends half the turns elsewhere";
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
