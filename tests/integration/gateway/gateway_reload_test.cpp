// SPDX-License-Identifier: Apache-2.0
// Hot reload and signals (issue 9): SIGHUP (or `llmux gateway --reload` through the pid file)
// loads the config again — backends added, removed, reweighted; routes and policies changed —
// while running requests finish on what they started with; an invalid config is rejected and the
// old one keeps serving; every other signal that would end the process is handled or ignored.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "support/gated_backend.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

std::string config(const std::string& backends, const std::string& route,
                   const std::string& extra = "") {
  return "listen: \"127.0.0.1:0\"\nthreads: 2\n" + extra + "backends:\n" + backends + "routes:\n" +
         route;
}

std::int64_t generation(int gw_port) {
  Response r = HttpClient(gw_port).get("/health");
  return parse_json(r.body).at("config_generation").as_int64();
}

/// SIGHUP, then waits until GET /health reports generation `gen` (bounded).
bool reload_to(GatewayServer& gw, std::int64_t gen) {
  if (::kill(gw.pid(), SIGHUP) != 0) return false;
  return poll_until([&] { return generation(gw.port()) == gen; }, 5s);
}

/// Which backend answered each of `n` requests (X-LLMux-Backend), counted.
std::map<std::string, int> spread(int gw_port, int n) {
  std::map<std::string, int> out;
  HttpClient c(gw_port);
  for (int i = 0; i < n; ++i)
    ++out[c.get("/v1/spread/" + std::to_string(i)).header("x-llmux-backend")];
  return out;
}

TEST(GatewayReload, BackendsAddedReweightedAndRemovedTakeEffect) {
  GatedBackend a({GatedBackend::Mode::Echo});
  GatedBackend b({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      config(backend_line("a", a.port()), "  - {name: all, backends: [a], policy: round_robin}\n"));
  EXPECT_EQ(generation(gw->port()), 1);
  EXPECT_EQ(spread(gw->port(), 4), (std::map<std::string, int>{{"a", 4}}));

  // Added, with weight 3 against a's 1: b serves 3 of every 4.
  gw->rewrite_config(
      config(backend_line("a", a.port()) + backend_line("b", b.port(), ", weight: 3"),
             "  - {name: all, backends: [a, b], policy: round_robin}\n"));
  ASSERT_TRUE(reload_to(*gw, 2)) << gw->stderr_text();
  EXPECT_EQ(spread(gw->port(), 8), (std::map<std::string, int>{{"a", 2}, {"b", 6}}));
  EXPECT_NE(gw->stderr_text().find("backend b added"), std::string::npos) << gw->stderr_text();

  // Reweighted in place (the same backend, now 1:1), and the policy changed to first.
  gw->rewrite_config(config(backend_line("a", a.port()) + backend_line("b", b.port()),
                            "  - {name: all, backends: [b, a], policy: first}\n"));
  ASSERT_TRUE(reload_to(*gw, 3)) << gw->stderr_text();
  EXPECT_EQ(spread(gw->port(), 4), (std::map<std::string, int>{{"b", 4}}));
  EXPECT_NE(gw->stderr_text().find("backend b: weight 3 → 1"), std::string::npos);
  EXPECT_NE(gw->stderr_text().find("route all: policy round_robin → first"), std::string::npos);

  // Removed: a gets nothing more.
  const auto a_requests = a.requests().size();
  gw->rewrite_config(config(backend_line("b", b.port()), "  - {name: all, backends: [b]}\n"));
  ASSERT_TRUE(reload_to(*gw, 4)) << gw->stderr_text();
  EXPECT_EQ(spread(gw->port(), 4), (std::map<std::string, int>{{"b", 4}}));
  EXPECT_EQ(a.requests().size(), a_requests);
  EXPECT_NE(gw->stderr_text().find("backend a removed"), std::string::npos);
  gw->expect_clean_exit();
}

TEST(GatewayReload, InvalidConfigIsRejectedAndTheOldOneKeepsServing) {
  GatedBackend a({GatedBackend::Mode::Echo});
  const std::string good =
      config(backend_line("a", a.port()), "  - {name: all, backends: [a], policy: first}\n");
  auto gw = GatewayServer::with_config(good);
  // A route naming a backend that does not exist, and a YAML syntax error.
  gw->rewrite_config(config(backend_line("a", a.port()), "  - {name: all, backends: [nope]}\n"));
  ASSERT_EQ(::kill(gw->pid(), SIGHUP), 0);
  EXPECT_TRUE(poll_until(
      [&] { return gw->stderr_text().find("no backend named 'nope'") != std::string::npos; }, 5s))
      << gw->stderr_text();
  EXPECT_NE(gw->stderr_text().find("reload: the new configuration is invalid"), std::string::npos);
  gw->rewrite_config("backends: [ {name: a\n");
  ASSERT_EQ(::kill(gw->pid(), SIGHUP), 0);
  EXPECT_TRUE(poll_until(
      [&] {
        const std::string e = gw->stderr_text();
        return e.find("reload: the new configuration is invalid") !=
               e.rfind("reload: the new configuration is invalid");
      },
      5s))
      << gw->stderr_text();
  EXPECT_TRUE(gw->alive());
  EXPECT_EQ(generation(gw->port()), 1);
  EXPECT_EQ(spread(gw->port(), 3), (std::map<std::string, int>{{"a", 3}}));
  // Fixed: the next reload takes.
  gw->rewrite_config(good);
  EXPECT_TRUE(reload_to(*gw, 2)) << gw->stderr_text();
  gw->expect_clean_exit();
}

TEST(GatewayReload, RemovingABackendLetsItsRunningStreamFinish) {
  GatedBackend a({GatedBackend::Mode::GatedSse, 6});
  GatedBackend b({GatedBackend::Mode::Echo});
  auto gw =
      GatewayServer::with_config(config(backend_line("a", a.port()) + backend_line("b", b.port()),
                                        "  - {name: all, backends: [a, b], policy: first}\n"));
  auto stream =
      StreamingResponse::open(gw->port(), "POST", "/v1/chat/completions",
                              R"({"model":"m","stream":true})", {{"x-request-id", "held"}});
  ASSERT_TRUE(stream);
  ASSERT_EQ(stream->status(), 200);
  EXPECT_EQ(stream->header("x-llmux-backend"), "a");
  a.release(2);
  ASSERT_TRUE(a.wait_events_sent(2, 5s));

  gw->rewrite_config(config(backend_line("b", b.port()), "  - {name: all, backends: [b]}\n"));
  ASSERT_TRUE(reload_to(*gw, 2)) << gw->stderr_text();
  EXPECT_EQ(spread(gw->port(), 3), (std::map<std::string, int>{{"b", 3}}));

  // The stream started on a goes on to its end, whole.
  a.release(10);
  std::string body;
  Chunk ch;
  ReadStatus st;
  while ((st = stream->read(ch, 5s)) == ReadStatus::Data) body += ch.bytes;
  EXPECT_EQ(st, ReadStatus::End);
  for (int k = 0; k < 6; ++k)
    EXPECT_NE(body.find("\"k\":" + std::to_string(k)), std::string::npos) << body;
  EXPECT_NE(body.find("data: [DONE]"), std::string::npos) << body;
  EXPECT_EQ(body.find("error"), std::string::npos) << body;
  const auto rec = gw->wait_access_record("held", 5s);
  EXPECT_EQ(rec.at("backend"), "a");
  EXPECT_EQ(rec.at("status"), 200);
  // Its connection is not kept for a backend that is gone (closed at once, not after the pool's
  // idle timeout of 4 s).
  EXPECT_TRUE(poll_until([&] { return a.connections_closed() == a.connections_accepted(); }, 1s))
      << a.connections_closed() << " of " << a.connections_accepted() << " closed";
  gw->expect_clean_exit();
}

TEST(GatewayReload, ReloadCommandSignalsThroughThePidFileAfterCheckingTheConfig) {
  GatedBackend a({GatedBackend::Mode::Echo});
  GatedBackend b({GatedBackend::Mode::Echo});
  TempDir dir;
  const std::string pid_file = dir.path() + "/llmux.pid";
  const std::string extra = "pid_file: \"" + pid_file + "\"\n";
  auto gw = GatewayServer::with_config(
      config(backend_line("a", a.port()), "  - {name: all, backends: [a]}\n", extra));
  EXPECT_EQ(read_text_file(pid_file), std::to_string(gw->pid()) + "\n");

  // An invalid config is reported by --reload itself and never sent.
  gw->rewrite_config(
      config(backend_line("a", a.port()), "  - {name: all, backends: [b]}\n", extra));
  RunResult bad = run_gateway({"--reload", "--config", gw->config_path()});
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("no backend named 'b'"), std::string::npos) << bad.err;
  EXPECT_EQ(generation(gw->port()), 1);
  EXPECT_EQ(gw->stderr_text().find("reload:"), std::string::npos) << gw->stderr_text();

  gw->rewrite_config(
      config(backend_line("b", b.port()), "  - {name: all, backends: [b]}\n", extra));
  RunResult ok = run_gateway({"--reload", "--config", gw->config_path()});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("sent SIGHUP"), std::string::npos) << ok.out;
  EXPECT_TRUE(poll_until([&] { return generation(gw->port()) == 2; }, 5s)) << gw->stderr_text();
  EXPECT_EQ(spread(gw->port(), 2), (std::map<std::string, int>{{"b", 2}}));

  // No pid file to read: a clear error, exit 1.
  const pid_t pid = gw->pid();
  gw->expect_clean_exit();
  EXPECT_EQ(read_text_file(pid_file), "") << "the pid file outlived the gateway " << pid;
  RunResult gone = run_gateway({"--reload", "--config", gw->config_path()});
  EXPECT_EQ(gone.exit_code, 1) << gone.out << gone.err;
  EXPECT_NE(gone.err.find("pid file"), std::string::npos) << gone.err;
}

TEST(GatewaySignals, OtherSignalsAreIgnoredWithALogLineAndUsr1ReopensTheAccessLog) {
  GatedBackend be({GatedBackend::Mode::Echo});
  auto gw = GatewayServer::with_config(
      config(backend_line("be", be.port()), "  - {name: all, backends: [be]}\n"));
  for (int sig : {SIGUSR2, SIGALRM, SIGPIPE, SIGVTALRM, SIGRTMIN + 2}) {
    ASSERT_EQ(::kill(gw->pid(), sig), 0);
    EXPECT_EQ(HttpClient(gw->port()).get("/v1/after-signal").status, 200) << "signal " << sig;
  }
  EXPECT_TRUE(poll_until(
      [&] {
        const std::string e = gw->stderr_text();
        return e.find("SIGUSR2): ignored") != std::string::npos &&
               e.find("SIGRTMIN+2): ignored") != std::string::npos;
      },
      5s))
      << gw->stderr_text();
  EXPECT_TRUE(gw->alive());

  // Log rotation: the file is moved away, SIGUSR1, and the next line goes to a new file.
  HttpClient(gw->port()).get("/v1/before-rotation", {{"x-request-id", "before"}});
  ASSERT_FALSE(gw->wait_access_record("before", 5s).empty());
  const std::string rotated = gw->access_log_path() + ".1";
  ASSERT_EQ(std::rename(gw->access_log_path().c_str(), rotated.c_str()), 0);
  ASSERT_EQ(::kill(gw->pid(), SIGUSR1), 0);
  ASSERT_TRUE(poll_until(
      [&] { return gw->stderr_text().find("access log reopened") != std::string::npos; }, 5s))
      << gw->stderr_text();
  HttpClient(gw->port()).get("/v1/after-rotation", {{"x-request-id", "after"}});
  EXPECT_FALSE(gw->wait_access_record("after", 5s).empty());
  EXPECT_EQ(read_text_file(rotated).find("after-rotation"), std::string::npos);
  EXPECT_NE(read_text_file(rotated).find("before-rotation"), std::string::npos);
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
