// SPDX-License-Identifier: Apache-2.0
// Backends the gateway can see (issue 9): a dead backend is ejected and logged, comes back when
// its checks pass, GET /health says whether every route has a backend up, every backend being
// out still tries one (never a silent blackhole), and a backend whose connects hang costs one
// connect timeout per ejection, not one per request.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

/// `llmux sim` on a given port (to bring a killed backend back where it was).
std::unique_ptr<ChildProcess> sim_on(int port) {
  return std::make_unique<ChildProcess>(
      std::vector<std::string>{llmux_binary(), "sim", "--host", "127.0.0.1", "--port",
                               std::to_string(port), "--time-scale", "100"});
}

void kill_hard(ChildProcess& p) {
  ::kill(p.pid(), SIGKILL);
  p.wait(5s);
}

/// Fast health settings: checks every 200 ms, out after 2 failures, back after 1 pass; two
/// failed attempts in a row eject for 1 s (at most 2 s).
std::string health_config(const std::string& backends, const std::string& names,
                          const std::string& connect = "500ms") {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\n"
         "health_checks: {interval: 200ms, timeout: 150ms, healthy_threshold: 1, "
         "unhealthy_threshold: 2, jitter: 0}\n"
         "outlier_detection: {consecutive_failures: 2, base_ejection: 1s, max_ejection: 2s}\n"
         "timeouts: {connect: " +
         connect + "}\nbackends:\n" + backends + "routes:\n  - {name: all, backends: [" + names +
         "], policy: round_robin}\n";
}

json::object health(int gw_port, int* status = nullptr) {
  Response r = HttpClient(gw_port).get("/health");
  if (status) *status = r.status;
  return parse_json(r.body).as_object();
}

std::string state_of(const json::object& h, const std::string& backend) {
  for (const auto& b : h.at("backends").as_array())
    if (b.at("name") == backend.c_str()) return std::string(b.at("state").as_string());
  return "";
}

/// Polls GET /health until `backend` is in `state` (bounded); returns how long it took.
std::optional<std::chrono::milliseconds> wait_state(int gw_port, const std::string& backend,
                                                    const std::string& state,
                                                    std::chrono::milliseconds timeout) {
  const auto start = Clock::now();
  while (Clock::now() - start < timeout) {
    if (state_of(health(gw_port), backend) == state)
      return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    std::this_thread::sleep_for(20ms);  // polling interval
  }
  return std::nullopt;
}

int retried_requests(GatewayServer& gw, const std::string& prefix, int n) {
  int retried = 0;
  for (int i = 0; i < n; ++i) {
    auto rec = gw.wait_access_record(prefix + std::to_string(i), 5s);
    EXPECT_FALSE(rec.empty()) << read_text_file(gw.access_log_path());
    if (!rec.empty() && i64(rec.at("attempts")) > 1) ++retried;
  }
  return retried;
}

TEST(GatewayHealth, DeadBackendIsEjectedLoggedAndReadmittedWhenItReturns) {
  auto a = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
  SimServer b({"--time-scale", "100"});
  const int a_port = a->port();
  auto gw = GatewayServer::with_config(
      health_config(backend_line("a", a_port) + backend_line("b", b.port()), "a, b"));
  int status = 0;
  json::object h = health(gw->port(), &status);
  EXPECT_EQ(status, 200) << json::serialize(h);
  EXPECT_EQ(h.at("status"), "ok");
  EXPECT_EQ(state_of(h, "a"), "up");

  kill_hard(*a);
  a.reset();
  HttpClient c(gw->port());
  constexpr int kRequests = 20;
  for (int i = 0; i < kRequests; ++i) {
    Response r = c.post("/v1/completions", R"({"prompt":"hello","max_tokens":2})",
                        {{"X-Request-Id", "dead-" + std::to_string(i)}});
    ASSERT_EQ(r.status, 200) << "a healthy backend existed: " << r.body;
    EXPECT_EQ(r.header("x-llmux-backend"), "b");
  }
  // Round-robin would send every other request to the dead one; once ejected it gets none.
  EXPECT_LE(retried_requests(*gw, "dead-", kRequests), 2);
  const std::string err = gw->stderr_text();
  EXPECT_TRUE(err.find("backend a ejected") != std::string::npos ||
              err.find("backend a unhealthy") != std::string::npos)
      << "the change of state is logged: " << err;

  // Readiness stays 200 (b is up) and names a's state; the checks mark it unhealthy.
  ASSERT_TRUE(wait_state(gw->port(), "a", "unhealthy", 3s)) << json::serialize(health(gw->port()));
  h = health(gw->port(), &status);
  EXPECT_EQ(status, 200) << json::serialize(h);
  EXPECT_EQ(state_of(h, "b"), "up");

  // Back where it was: re-admitted within two check intervals (and a margin for a busy machine).
  auto again = sim_on(a_port);
  const auto back = wait_state(gw->port(), "a", "up", 5s);
  const auto trial = back ? back : wait_state(gw->port(), "a", "trial", 1s);
  ASSERT_TRUE(trial) << json::serialize(health(gw->port()));
  EXPECT_NE(gw->stderr_text().find("backend a healthy"), std::string::npos) << gw->stderr_text();
  int to_a = 0;
  for (int i = 0; i < 10; ++i) {
    Response r = c.post("/v1/completions", R"({"prompt":"hello","max_tokens":2})");
    ASSERT_EQ(r.status, 200) << r.body;
    to_a += r.header("x-llmux-backend") == "a" ? 1 : 0;
  }
  EXPECT_GE(to_a, 3) << "a takes its share again";
  gw->expect_clean_exit();
}

TEST(GatewayHealth, EveryBackendDownIs503ButStillTriedAndRecovers) {
  auto a = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
  const int a_port = a->port();
  auto gw = GatewayServer::with_config(health_config(backend_line("a", a_port), "a"));
  kill_hard(*a);
  a.reset();
  ASSERT_TRUE(wait_state(gw->port(), "a", "unhealthy", 3s));
  int status = 0;
  json::object h = health(gw->port(), &status);
  EXPECT_EQ(status, 503) << json::serialize(h);
  EXPECT_EQ(h.at("status"), "unavailable");
  EXPECT_EQ(i64(h.at("routes").as_array().at(0).at("backends_up")), 0);
  // Liveness only says the process runs.
  EXPECT_EQ(HttpClient(gw->port()).get("/health/live").status, 200);
  // A request is still tried on the backend (never refused by the gateway alone) and fails as
  // the backend does: 503 in the OpenAI shape, naming it.
  Response r = HttpClient(gw->port())
                   .post("/v1/completions", R"({"prompt":"x","max_tokens":2})",
                         {{"X-Request-Id", "all-down"}});
  EXPECT_EQ(r.status, 503) << r.body;
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, 503, &why)) << why;
  EXPECT_NE(r.body.find("a"), std::string::npos) << r.body;
  EXPECT_GE(i64(gw->wait_access_record("all-down", 5s).at("attempts")), 1);

  auto again = sim_on(a_port);
  const auto start = Clock::now();
  for (;;) {
    health(gw->port(), &status);
    if (status == 200 || Clock::now() - start > 5s) break;
    std::this_thread::sleep_for(20ms);  // polling interval
  }
  EXPECT_EQ(status, 200) << json::serialize(health(gw->port()));
  EXPECT_EQ(
      HttpClient(gw->port()).post("/v1/completions", R"({"prompt":"x","max_tokens":2})").status,
      200);
  gw->expect_clean_exit();
}

/// A listening socket that never accepts, its accept queue filled: connects to it hang, as to a
/// powered-off machine.
class BlackHole {
 public:
  BlackHole() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 0) != 0)
      throw std::runtime_error("black hole: bind/listen failed");
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    // Fill the queue: with a backlog of 0 the kernel queues one or two; later SYNs are dropped.
    for (int i = 0; i < 4; ++i) {
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers_.push_back(c);
    }
    // Until the accept queue is full: for a listening socket TCP_INFO gives the queue's length
    // (tcpi_unacked) and its limit (tcpi_sacked); it is full above the limit.
    const bool full = poll_until(
        [this] {
          tcp_info info{};
          socklen_t size = sizeof info;
          return ::getsockopt(fd_, IPPROTO_TCP, TCP_INFO, &info, &size) == 0 &&
                 info.tcpi_unacked > info.tcpi_sacked;
        },
        5s, 5ms);
    if (!full) throw std::runtime_error("black hole: the accept queue did not fill");
  }
  ~BlackHole() {
    for (int c : fillers_) ::close(c);
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
  std::vector<int> fillers_;
};

TEST(GatewayHealth, HangingConnectsCostOneTimeoutPerEjection) {
  BlackHole hole;
  SimServer b({"--time-scale", "100"});
  // Checks off: passive detection alone must keep requests away from the hanging backend.
  std::string cfg = health_config(backend_line("hole", hole.port()) + backend_line("b", b.port()),
                                  "hole, b", "300ms");
  const std::string checks = "health_checks: {";
  cfg.replace(cfg.find(checks), checks.size(), checks + "enabled: false, ");
  auto gw = GatewayServer::with_config(cfg);
  HttpClient c(gw->port(), 20s);
  constexpr int kRequests = 16;
  for (int i = 0; i < kRequests; ++i) {
    Response r = c.post("/v1/completions", R"({"prompt":"hello","max_tokens":2})",
                        {{"X-Request-Id", "hang-" + std::to_string(i)}});
    ASSERT_EQ(r.status, 200) << r.body;
  }
  // Round-robin would send half of them into the hole (8 connect timeouts); ejection after 2
  // failures in a row, then one trial per ejection, bound it.
  const int retried = retried_requests(*gw, "hang-", kRequests);
  EXPECT_LE(retried, 3) << gw->stderr_text();
  EXPECT_GE(retried, 1) << "the hole was tried at all";
  EXPECT_NE(gw->stderr_text().find("backend hole ejected"), std::string::npos) << gw->stderr_text();
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test

namespace llmux::test {
namespace {

/// What one event stream through the gateway brought: its backend, whether it ended with
/// [DONE], and the error event's text if one came.
struct StreamEnd {
  std::string backend;
  bool done = false;
  std::string error;
  ReadStatus end = ReadStatus::Error;
};

StreamEnd finish(StreamingResponse& s) {
  StreamEnd out;
  out.backend = s.header("x-llmux-backend");
  SseResult r = read_sse(s, SIZE_MAX, 8s, 20s);
  out.end = r.end;
  for (const auto& e : r.events) {
    if (e.data == "[DONE]") out.done = true;
    if (e.data.find("\"error\"") != std::string::npos) out.error = e.data;
  }
  return out;
}

TEST(GatewayHealth, StallingBackendIsEjectedAndItsStreamsEndWithAnError) {
  // Both simulators at the seed's pace (~50 tokens/s a stream); b stops every stream after 60
  // tokens (~1.2 s), as an engine that hangs.
  SimServer a({"--time-scale", "1"});
  SimServer b({"--time-scale", "1"});
  ASSERT_EQ(HttpClient(b.port()).post("/admin/faults", R"({"stall_after": 60})").status, 200);
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\n"
      "outlier_detection: {consecutive_failures: 3, base_ejection: 10s, stall_timeout: 1s}\n"
      // Stall detection alone: a cut stream is not continued elsewhere (gateway_migration_test).
      "migration: {enabled: false}\n"
      "backends:\n" +
      backend_line("a", a.port()) + backend_line("b", b.port()) +
      "routes:\n  - {name: all, backends: [a, b], policy: round_robin}\n");
  const std::string body =
      R"({"messages":[{"role":"user","content":"go"}],"max_tokens":150,"ignore_eos":true,"stream":true})";
  std::vector<std::unique_ptr<StreamingResponse>> streams;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i)
    streams.push_back(StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions", body));
  int on_b = 0;
  for (auto& s : streams) {
    const StreamEnd e = finish(*s);
    if (e.backend == "b") {
      ++on_b;
      // Cut with an error event in the stream's dialect, long before the idle timeout (120 s).
      EXPECT_EQ(e.end, ReadStatus::End);
      EXPECT_NE(e.error.find("b stalled"), std::string::npos) << e.error;
      EXPECT_TRUE(e.done);
    } else {
      EXPECT_EQ(e.backend, "a");
      EXPECT_TRUE(e.done);
      EXPECT_EQ(e.error, "") << "a stream on a healthy backend was cut";
    }
  }
  EXPECT_EQ(on_b, 2);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 8s);
  EXPECT_EQ(state_of(health(gw->port()), "b"), "stalled");
  EXPECT_NE(gw->stderr_text().find("backend b ejected for 10s: stalled"), std::string::npos)
      << gw->stderr_text();
  // New requests go to a only.
  for (int i = 0; i < 4; ++i) {
    Response r = HttpClient(gw->port())
                     .post("/v1/chat/completions",
                           R"({"messages":[{"role":"user","content":"after"}],"max_tokens":2})");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("x-llmux-backend"), "a");
  }
  gw->expect_clean_exit();
}

TEST(GatewayHealth, AStalledBackendReturnsWhenAProbeGenerationCompletes) {
  // b stops every stream after 10 tokens: the probe (16 tokens) stalls too, so b stays out until
  // the fault is cleared; then the next probe brings it back, with no client request risked.
  SimServer a({"--time-scale", "1"});
  SimServer b({"--time-scale", "1"});
  ASSERT_EQ(HttpClient(b.port()).post("/admin/faults", R"({"stall_after": 10})").status, 200);
  auto gw = GatewayServer::with_config(
      "listen: \"127.0.0.1:0\"\nthreads: 2\n"
      "health_checks: {interval: 200ms, timeout: 150ms, jitter: 0}\n"
      "outlier_detection: {base_ejection: 1s, stall_timeout: 1s}\n"
      "migration: {enabled: false}\n"
      "backends:\n" +
      backend_line("a", a.port()) + backend_line("b", b.port()) +
      "routes:\n  - {name: all, backends: [b, a], policy: first}\n");
  auto s = StreamingResponse::open(
      gw->port(), "POST", "/v1/chat/completions",
      R"({"messages":[{"role":"user","content":"go"}],"max_tokens":100,"ignore_eos":true,"stream":true})");
  const StreamEnd e = finish(*s);
  EXPECT_EQ(e.backend, "b");
  EXPECT_NE(e.error.find("b stalled"), std::string::npos) << e.error;
  ASSERT_TRUE(wait_state(gw->port(), "b", "stalled", 2s)) << gw->stderr_text();
  // Its ejection (1 s) runs out, but failing probes keep it out.
  std::this_thread::sleep_for(2s);  // longer than the 1 s ejection: what keeps b out is the probe
  EXPECT_EQ(state_of(health(gw->port()), "b"), "stalled") << gw->stderr_text();
  const auto before = gw->access_log().size();
  ASSERT_EQ(HttpClient(b.port()).post("/admin/faults", "{}").status, 200);
  const auto back = wait_state(gw->port(), "b", "up", 5s);
  ASSERT_TRUE(back) << gw->stderr_text();
  EXPECT_LT(*back, 3s);
  EXPECT_NE(gw->stderr_text().find("backend b back in service: a probe generation completed"),
            std::string::npos);
  EXPECT_EQ(gw->access_log().size(), before) << "no client request was sent to b meanwhile";
  Response r = HttpClient(gw->port())
                   .post("/v1/chat/completions",
                         R"({"messages":[{"role":"user","content":"again"}],"max_tokens":2})");
  EXPECT_EQ(r.header("x-llmux-backend"), "b");
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
