// SPDX-License-Identifier: Apache-2.0
// The runtime fault set of `POST /admin/faults`: parsing and validating its JSON, writing it
// back, its effect on one request's faults, the malformed bytes, and who may post it.
#include "sim/runtime_faults.hpp"

#include <gtest/gtest.h>
#include <boost/asio/ip/address.hpp>
#include <boost/json.hpp>

#include <string>

#include "sim/admin.hpp"
#include "sim/faults.hpp"

namespace llmux::sim {
namespace {

namespace json = boost::json;

RuntimeFaults ok(std::string_view body) {
  auto r = parse_runtime_faults(body);
  if (auto* e = std::get_if<FaultsError>(&r)) {
    ADD_FAILURE() << body << " -> " << e->message;
    return {};
  }
  return std::get<RuntimeFaults>(r);
}

FaultsError refused(std::string_view body) {
  auto r = parse_runtime_faults(body);
  if (std::holds_alternative<RuntimeFaults>(r)) {
    ADD_FAILURE() << body << " was accepted";
    return {};
  }
  return std::get<FaultsError>(r);
}

TEST(SimRuntimeFaults, EmptyObjectIsTheEmptySet) {
  EXPECT_EQ(ok("{}"), RuntimeFaults{});
  EXPECT_EQ(json::serialize(runtime_faults_json(RuntimeFaults{})), "{}");
}

TEST(SimRuntimeFaults, EveryField) {
  const RuntimeFaults f = ok(R"({
    "error_rate": 0.5, "error_statuses": [429, 500, 503],
    "crash_after_requests": 3, "crash_at": 1.5, "hang": true,
    "stall_after": 2, "stall_rate": 0.25, "close_after": 0, "close_rate": 1,
    "not_ready_for": 2, "malformed": "sse", "latency_ms": 12.5, "refuse_new": true})");
  EXPECT_EQ(f.error_rate, 0.5);
  EXPECT_EQ(f.error_statuses, (std::vector<int>{429, 500, 503}));
  EXPECT_EQ(f.crash_after_requests, 3);
  EXPECT_EQ(f.crash_at, 1.5);
  EXPECT_TRUE(f.hang);
  EXPECT_EQ(f.stall_after, 2);
  EXPECT_EQ(f.stall_rate, 0.25);
  EXPECT_EQ(f.close_after, 0);
  EXPECT_EQ(f.close_rate, 1.0);
  EXPECT_EQ(f.not_ready_for, 2.0);
  EXPECT_EQ(f.malformed, Malformed::sse);
  EXPECT_EQ(f.latency_ms, 12.5);
  EXPECT_TRUE(f.refuse_new);
  EXPECT_EQ(ok(R"({"malformed":"json"})").malformed, Malformed::json);
  EXPECT_FALSE(ok(R"({"hang":false,"refuse_new":false})").hang);
  EXPECT_TRUE(ok(R"({"freeze":true})").freeze);
  EXPECT_FALSE(ok(R"({"freeze":false})").freeze);
}

TEST(SimRuntimeFaults, ErrorRateAloneMeans500) {
  EXPECT_EQ(ok(R"({"error_rate":1})").error_statuses, std::vector<int>{500});
}

TEST(SimRuntimeFaults, WritesBackWhatItReads) {
  for (const char* body :
       {R"({"error_rate":0.25,"error_statuses":[503]})", R"({"crash_after_requests":7})",
        R"({"crash_at":0.5,"not_ready_for":3})", R"({"hang":true})", R"({"freeze":true})",
        R"({"stall_after":1,"stall_rate":0.5,"close_after":4})", R"({"malformed":"json"})",
        R"({"latency_ms":40,"refuse_new":true})"}) {
    SCOPED_TRACE(body);
    const RuntimeFaults f = ok(body);
    EXPECT_EQ(ok(json::serialize(runtime_faults_json(f))), f);
    EXPECT_EQ(runtime_faults_json(f).size(), json::parse(body).as_object().size());
  }
}

struct Bad {
  const char* body;
  const char* field;  // "" = the body itself
};

TEST(SimRuntimeFaults, BadBodiesNameTheField) {
  const Bad cases[] = {
      {"", ""},
      {"{", ""},
      {"[]", ""},
      {"null", ""},
      {R"("hang")", ""},
      {R"({"bogus":1})", "bogus"},
      {R"({"hang":true,"Hang":true})", "Hang"},
      {R"({"error_rate":"0.5"})", "error_rate"},
      {R"({"error_rate":1.5})", "error_rate"},
      {R"({"error_rate":-0.1})", "error_rate"},
      {R"({"error_rate":null})", "error_rate"},
      {R"({"error_rate":0.5,"error_statuses":[]})", "error_statuses"},
      {R"({"error_rate":0.5,"error_statuses":[200]})", "error_statuses"},
      {R"({"error_rate":0.5,"error_statuses":[600]})", "error_statuses"},
      {R"({"error_rate":0.5,"error_statuses":["500"]})", "error_statuses"},
      {R"({"error_rate":0.5,"error_statuses":500})", "error_statuses"},
      {R"({"error_statuses":[500]})", "error_statuses"},
      {R"({"crash_after_requests":0})", "crash_after_requests"},
      {R"({"crash_after_requests":-1})", "crash_after_requests"},
      {R"({"crash_after_requests":1.5})", "crash_after_requests"},
      {R"({"crash_after_requests":2.0})", "crash_after_requests"},
      {R"({"crash_after_requests":"2"})", "crash_after_requests"},
      {R"({"crash_after_requests":18446744073709551615})", "crash_after_requests"},
      {R"({"crash_at":-1})", "crash_at"},
      {R"({"crash_at":1e9})", "crash_at"},
      {R"({"hang":1})", "hang"},
      {R"({"hang":"true"})", "hang"},
      {R"({"stall_after":-1})", "stall_after"},
      {R"({"stall_after":true})", "stall_after"},
      {R"({"stall_rate":0.5})", "stall_rate"},
      {R"({"stall_after":1,"stall_rate":2})", "stall_rate"},
      {R"({"close_after":-1})", "close_after"},
      {R"({"close_rate":0.5})", "close_rate"},
      {R"({"not_ready_for":-0.5})", "not_ready_for"},
      {R"({"not_ready_for":"5"})", "not_ready_for"},
      {R"({"malformed":"xml"})", "malformed"},
      {R"({"malformed":true})", "malformed"},
      {R"({"latency_ms":-1})", "latency_ms"},
      {R"({"latency_ms":1e12})", "latency_ms"},
      {R"({"refuse_new":0})", "refuse_new"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.body);
    const FaultsError e = refused(c.body);
    EXPECT_EQ(e.field, c.field);
    if (*c.field) {
      EXPECT_NE(e.message.find(std::string("'") + c.field + "'"), std::string::npos) << e.message;
    }
  }
}

TEST(SimRuntimeFaults, ApplyReplacesTheFlagsKindByKind) {
  std::mt19937_64 rng(3);
  RequestFaults flags;
  flags.error_status = 500;
  flags.close_after = 9;
  flags.stall_after = 8;
  flags.latency_ms = 7;

  RequestFaults f = flags;
  apply_runtime_faults(f, RuntimeFaults{}, rng);  // the empty set keeps the flags' draw
  EXPECT_EQ(f.error_status, 500);
  EXPECT_EQ(f.close_after, 9);
  EXPECT_EQ(f.stall_after, 8);
  EXPECT_EQ(f.latency_ms, 7);
  EXPECT_EQ(f.malformed, Malformed::none);

  f = flags;
  apply_runtime_faults(f, ok(R"({"error_rate":0,"close_after":2,"malformed":"json"})"), rng);
  EXPECT_EQ(f.error_status, 0);  // "error_rate": 0 turns the flags' errors off
  EXPECT_EQ(f.close_after, 2);
  EXPECT_EQ(f.stall_after, 8);
  EXPECT_EQ(f.latency_ms, 7);
  EXPECT_EQ(f.malformed, Malformed::json);

  f = flags;
  apply_runtime_faults(f, ok(R"({"error_rate":1,"error_statuses":[503],"latency_ms":0})"), rng);
  EXPECT_EQ(f.error_status, 503);
  EXPECT_EQ(f.latency_ms, 0);

  f = flags;
  apply_runtime_faults(f, ok(R"({"stall_after":1,"stall_rate":0})"), rng);
  EXPECT_EQ(f.stall_after, -1);  // rate 0: never, whatever the flags said
}

TEST(SimRuntimeFaults, RatesAreFractionsAndTheHeaderStillWins) {
  std::mt19937_64 rng(11);
  const RuntimeFaults rt = ok(R"({"error_rate":0.5,"error_statuses":[429,503]})");
  int errors = 0;
  constexpr int kN = 10000;
  for (int i = 0; i < kN; ++i) {
    RequestFaults f;
    apply_runtime_faults(f, rt, rng);
    if (f.error_status != 0) {
      ++errors;
      EXPECT_TRUE(f.error_status == 429 || f.error_status == 503) << f.error_status;
    }
  }
  EXPECT_NEAR(static_cast<double>(errors) / kN, 0.5, 0.03);

  RequestFaults f;
  apply_runtime_faults(f, ok(R"({"error_rate":1,"close_after":3})"), rng);
  apply_fault_header(f, "error=0, close-after=5");
  EXPECT_EQ(f.error_status, 0);
  EXPECT_EQ(f.close_after, 5);
}

TEST(SimMalformed, JsonCutsTheDataOfOneEvent) {
  std::string out = "data: {\"role\"}\n\n";
  const std::size_t start = out.size();
  out += "data: {\"abcdefgh\":1}\n\n";
  malform_frame(out, start, Malformed::json);
  EXPECT_EQ(out, "data: {\"role\"}\n\ndata: {\"abcde\n\n");  // 7 of its 15 bytes

  std::string typed = "event: response.output_text.delta\ndata: {\"a\":12}\n\n";
  malform_frame(typed, 0, Malformed::json);
  EXPECT_EQ(typed, "event: response.output_text.delta\ndata: {\"a\"\n\n");
}

TEST(SimMalformed, SseDropsTheBlankLineAndAddsGarbage) {
  std::string out = "data: {\"a\":1}\n\n";
  malform_frame(out, 0, Malformed::sse);
  EXPECT_EQ(out, "data: {\"a\":1}\n" + std::string(kGarbageLine));
  EXPECT_FALSE(out.ends_with("\n\n"));
}

TEST(SimMalformed, NoneOrNotAnEventChangesNothing) {
  std::string out = "data: {\"a\":1}\n\n";
  malform_frame(out, 0, Malformed::none);
  EXPECT_EQ(out, "data: {\"a\":1}\n\n");
  std::string partial = "data: {\"a\":1}\n";
  malform_frame(partial, 0, Malformed::json);
  EXPECT_EQ(partial, "data: {\"a\":1}\n");
  malform_frame(out, out.size(), Malformed::json);
  EXPECT_EQ(out, "data: {\"a\":1}\n\n");

  std::string body = R"({"id":"x","choices":[]})";
  malform_body(body, Malformed::sse);
  EXPECT_EQ(body, R"({"id":"x","choices":[]})");
  malform_body(body, Malformed::json);
  EXPECT_EQ(body, R"({"id":"x",")");
}

TEST(SimAdminAccess, LoopbackOnlyWithoutAToken) {
  namespace ip = boost::asio::ip;
  EXPECT_TRUE(is_loopback(ip::make_address("127.0.0.1")));
  EXPECT_TRUE(is_loopback(ip::make_address("127.255.0.9")));
  EXPECT_TRUE(is_loopback(ip::make_address("::1")));
  EXPECT_TRUE(is_loopback(ip::make_address("::ffff:127.0.0.1")));
  EXPECT_FALSE(is_loopback(ip::make_address("192.0.2.1")));
  EXPECT_FALSE(is_loopback(ip::make_address("::ffff:192.0.2.1")));
  EXPECT_FALSE(is_loopback(ip::make_address("2001:db8::1")));
  EXPECT_FALSE(is_loopback(ip::make_address("0.0.0.0")));

  EXPECT_EQ(admin_access(ip::make_address("127.0.0.1"), "", "").status, 0);
  EXPECT_EQ(admin_access(ip::make_address("::1"), "Bearer whatever", "").status, 0);
  EXPECT_EQ(admin_access(ip::make_address("198.51.100.7"), "", "").status, 403);
  EXPECT_EQ(admin_access(ip::make_address("198.51.100.7"), "Bearer x", "").status, 403);
}

TEST(SimAdminAccess, TokenIsRequiredFromEveryone) {
  namespace ip = boost::asio::ip;
  const auto lo = ip::make_address("127.0.0.1");
  const auto far = ip::make_address("203.0.113.5");
  EXPECT_EQ(admin_access(lo, "", "s3cret").status, 401);
  EXPECT_EQ(admin_access(lo, "Basic czNjcmV0", "s3cret").status, 401);
  EXPECT_EQ(admin_access(lo, "Bearer", "s3cret").status, 401);
  EXPECT_EQ(admin_access(lo, "Bearer s3cre", "s3cret").status, 403);
  EXPECT_EQ(admin_access(lo, "Bearer s3cret2", "s3cret").status, 403);
  EXPECT_EQ(admin_access(far, "Bearer wrong", "s3cret").status, 403);
  EXPECT_EQ(admin_access(lo, "Bearer s3cret", "s3cret").status, 0);
  EXPECT_EQ(admin_access(far, "bearer s3cret", "s3cret").status, 0);
  EXPECT_EQ(admin_access(far, "Bearer  s3cret ", "s3cret").status, 0);
}

}  // namespace
}  // namespace llmux::sim
