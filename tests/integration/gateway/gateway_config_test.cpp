// SPDX-License-Identifier: Apache-2.0
// `llmux gateway` refuses to start on an invalid configuration and says everything that is
// wrong at once (exit status 2, one line per error); `--check` validates without serving, then
// checks what start-up would on this machine (backend hosts resolve, the access log opens, the
// listen ports are free: exit 1 when one fails), `--probe` asks each backend GET /health and
// GET /v1/models, and warnings (a /v1 backend URL, a bare-number duration) never change the exit
// status.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "support/gateway_support.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

// The lines of the error report: the gateway indents each error by two spaces under a heading.
std::vector<std::string> error_lines(const std::string& err) {
  std::vector<std::string> out;
  std::istringstream in(err);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("  ")) out.push_back(line.substr(2));
  return out;
}

TEST(GatewayConfig, InvalidFileExits2AndReportsEveryError) {
  TempDir dir;
  // Three distinct problems: a thread count out of range, an ftp:// backend, and a route naming
  // a backend that does not exist.
  const std::string path = dir.write("bad.yaml",
                                     "listen: \"127.0.0.1:0\"\n"
                                     "threads: 5000\n"
                                     "backends:\n"
                                     "  - {name: server1, url: \"http://127.0.0.1:30001\"}\n"
                                     "  - {name: server2, url: \"ftp://127.0.0.1:30002\"}\n"
                                     "routes:\n"
                                     "  - {name: all, backends: [server1, server3]}\n");
  RunResult r = run_gateway({"--config", path});
  ASSERT_FALSE(r.timed_out) << "the gateway started on an invalid config: " << r.out;
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(r.out.find("\"ready\""), std::string::npos) << "it must not start: " << r.out;
  const auto lines = error_lines(r.err);
  ASSERT_EQ(lines.size(), 3u) << r.err;
  const char* fields[] = {"threads", "backends[1].url", "routes[0].backends[1]"};
  for (const char* f : fields) {
    bool found = false;
    for (const auto& l : lines) found = found || l.starts_with(std::string(f) + ":");
    EXPECT_TRUE(found) << "no error about " << f << " in:\n" << r.err;
  }
  EXPECT_NE(r.err.find("'5000'"), std::string::npos) << "errors quote the value: " << r.err;
  EXPECT_NE(r.err.find("'server3'"), std::string::npos) << r.err;
}

TEST(GatewayConfig, SyntaxAndUnknownKeysAreErrorsWithTheirLine) {
  TempDir dir;
  RunResult syntax =
      run_gateway({"--config", dir.write("syntax.yaml", "backends: [\n  - {name: a\n")});
  EXPECT_EQ(syntax.exit_code, 2) << syntax.err;
  EXPECT_NE(syntax.err.find("line "), std::string::npos) << syntax.err;

  RunResult typo =
      run_gateway({"--config", dir.write("typo.yaml",
                                         "backends:\n  - {name: a, url: \"http://127.0.0.1:1\"}\n"
                                         "routes:\n  - {backends: [a], polcy: first}\n")});
  EXPECT_EQ(typo.exit_code, 2) << typo.err;
  const auto lines = error_lines(typo.err);
  ASSERT_EQ(lines.size(), 1u) << typo.err;
  EXPECT_NE(lines[0].find("polcy"), std::string::npos) << typo.err;
  EXPECT_NE(lines[0].find("line 4"), std::string::npos) << typo.err;
}

TEST(GatewayConfig, MissingFileAndBadQuickFormExit2) {
  RunResult missing = run_gateway({"--config", "/nonexistent/llmux-gateway.yaml"});
  EXPECT_EQ(missing.exit_code, 2) << missing.err;
  EXPECT_FALSE(missing.err.empty());
  RunResult quick = run_gateway({"--port", "0", "--backend", "no-equals-sign"});
  EXPECT_EQ(quick.exit_code, 2) << quick.err;
  EXPECT_FALSE(quick.err.empty());
  RunResult nothing = run_gateway({});
  EXPECT_EQ(nothing.exit_code, 2) << nothing.err;
}

// The output lines that start with `prefix` (e.g. "  FAIL  "), prefix removed.
std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(prefix)) out.push_back(line.substr(prefix.size()));
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (l == line) return true;
  return false;
}

// A loopback port nothing listens on (it was free a moment ago).
int closed_port() {
  boost::asio::io_context ioc;
  namespace ip = boost::asio::ip;
  ip::tcp::acceptor a(ioc, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  return a.local_endpoint().port();
}

TEST(GatewayConfig, CheckAcceptsTheSeedConfig) {
  // The seed as shipped but for its addresses: its backends on loopback (nothing here names the
  // seed's LAN machines) and a free port (:8080 may be taken on the machine running the tests,
  // and --check fails on a port in use: CheckFailsOnAListenPortInUse). Threads stay at 0.
  const std::string seed = seed_config(closed_port(), closed_port(), 0);
  TempDir dir;
  RunResult r = run_gateway({"--check", "--config", dir.write("seed.yaml", seed)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("2 backends"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3 routes"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"ready\""), std::string::npos) << "--check must not serve: " << r.out;
  // What it says: listen address, threads, every timeout with its unit, health checks and
  // outlier detection (defaults filled in), and every start-up check passed.
  for (const char* line :
       {"listen: 127.0.0.1:0 (a free port chosen at start)", "timeouts:", "  connect: 5s",
        "  first_byte: 300s", "  idle: 120s", "  client_header: 30s", "  client_body: 60s",
        "  client_idle: 75s", "  drain: 30s", "access_log: stdout",
        "    health_checks: GET /health every 2s (jitter 0.1), timeout 1s, "
        "healthy after 1 pass, unhealthy after 2 failures",
        "outlier_detection: eject after 3 failures in a row for 5s, doubling "
        "up to 60s",
        "  ok    backend server1: 127.0.0.1 (an IP address)",
        "  ok    access_log stdout: nothing to open",
        "  ok    listen 127.0.0.1:0: a free port is chosen at start", "check OK"})
    EXPECT_TRUE(has_line(r.out, line)) << "no line '" << line << "' in:\n" << r.out;
  EXPECT_NE(r.out.find("threads: 0 (one per usable core: "), std::string::npos) << r.out;
  EXPECT_TRUE(lines_starting(r.out, "  FAIL  ").empty()) << r.out;
}

TEST(GatewayConfig, ThreadsZeroCountsTheCoresTheProcessMayUse) {
  if (::access("/usr/bin/taskset", X_OK) != 0) GTEST_SKIP() << "no taskset";
  TempDir dir;
  const std::string cfg =
      dir.write("g.yaml",
                "listen: 127.0.0.1:0\nbackends:\n  - {name: a, url: \"http://127.0.0.1:1\"}\n"
                "routes:\n  - {backends: [a]}\n");
  // Pinned to one core: one worker, whatever the machine has.
  RunResult r = run_to_completion(
      {"/usr/bin/taskset", "-c", "0", llmux_binary(), "gateway", "--check", "--config", cfg});
  EXPECT_NE(r.out.find("threads: 0 (one per usable core: 1 here)"), std::string::npos) << r.out;
}

TEST(GatewayConfig, CheckRejectsWhatServingWould) {
  TempDir dir;
  RunResult r =
      run_gateway({"--check", "--config",
                   dir.write("bad.yaml", "backends: []\nroutes: []\ntimeouts: {idle: 0ms}\n")});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_GE(error_lines(r.err).size(), 2u) << r.err;
}

TEST(GatewayConfig, CheckFailsOnABackendHostThatDoesNotResolve) {
  // Start-up refuses a backend whose host does not resolve; --check says so, naming it.
  TempDir dir;
  const std::string yaml =
      one_route_config(1,
                       backend_line("good", 30001) +
                           "  - {name: ghost, url: \"http://ghost.llmux-check.invalid:30002\"}\n",
                       "good, ghost");
  RunResult r = run_gateway({"--check", "--config", dir.write("dns.yaml", yaml)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto fails = lines_starting(r.out, "  FAIL  ");
  ASSERT_EQ(fails.size(), 1u) << r.out;
  EXPECT_TRUE(fails[0].starts_with("backend ghost: cannot resolve 'ghost.llmux-check.invalid'"))
      << fails[0];
  EXPECT_TRUE(has_line(r.out, "  ok    backend good: 127.0.0.1 (an IP address)")) << r.out;
  EXPECT_TRUE(has_line(r.out, "check FAILED: 1 problem")) << r.out;
  const auto errs = error_lines(r.err);
  ASSERT_EQ(errs.size(), 1u) << r.err;
  EXPECT_TRUE(errs[0].starts_with("backend ghost: ")) << r.err;
}

TEST(GatewayConfig, CheckFailsOnAListenPortInUse) {
  boost::asio::io_context ioc;
  namespace ip = boost::asio::ip;
  ip::tcp::acceptor holder(ioc, ip::tcp::endpoint(ip::make_address("127.0.0.1"), 0));
  const std::string port = std::to_string(holder.local_endpoint().port());
  std::string yaml = one_route_config(1, backend_line("a", 30001), "a");
  yaml.replace(yaml.find("127.0.0.1:0"), 11, "127.0.0.1:" + port);
  TempDir dir;
  const std::string path = dir.write("port.yaml", yaml);
  RunResult r = run_gateway({"--check", "--config", path});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto fails = lines_starting(r.out, "  FAIL  ");
  ASSERT_EQ(fails.size(), 1u) << r.out;
  EXPECT_EQ(fails[0],
            "listen 127.0.0.1:" + port + ": port " + port + " is in use by another process");
  EXPECT_EQ(error_lines(r.err).size(), 1u) << r.err;

  // The same config passes once the port is free: it was the port, nothing else.
  holder.close();
  RunResult freed = run_gateway({"--check", "--config", path});
  EXPECT_EQ(freed.exit_code, 0) << freed.out << freed.err;
  EXPECT_TRUE(has_line(freed.out, "  ok    listen 127.0.0.1:" + port + ": free")) << freed.out;
}

TEST(GatewayConfig, CheckFailsOnAnAccessLogItCannotOpenAndCreatesNothing) {
  TempDir dir;
  const std::string missing_dir = dir.path() + "/no-such-dir";
  const std::string yaml = one_route_config(1, backend_line("a", 30001), "a",
                                            "access_log: " + missing_dir + "/access.log\n");
  RunResult r = run_gateway({"--check", "--config", dir.write("log.yaml", yaml)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto fails = lines_starting(r.out, "  FAIL  ");
  ASSERT_EQ(fails.size(), 1u) << r.out;
  EXPECT_EQ(fails[0], "access_log " + missing_dir + "/access.log: directory '" + missing_dir +
                          "' does not exist");
  EXPECT_FALSE(std::filesystem::exists(missing_dir));

  // A log that does not exist yet in a writable directory passes, and --check leaves no file.
  const std::string fresh = dir.path() + "/fresh.log";
  RunResult ok =
      run_gateway({"--check", "--config", dir.write("log2.yaml", yaml), "--access-log", fresh});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_FALSE(std::filesystem::exists(fresh)) << "--check created the access log";
  // An existing one is neither truncated nor written to.
  const std::string existing = dir.write("existing.log", "{\"earlier\":1}\n");
  RunResult kept =
      run_gateway({"--check", "--config", dir.path() + "/log2.yaml", "--access-log", existing});
  EXPECT_EQ(kept.exit_code, 0) << kept.out << kept.err;
  EXPECT_EQ(read_text_file(existing), "{\"earlier\":1}\n");
}

TEST(GatewayConfig, CheckProbeReportsHealthAndModelsOfASimulator) {
  SimServer sim({"--served-model-name", "probe-check-model"});
  TempDir dir;
  const std::string path =
      dir.write("probe.yaml", one_route_config(1, backend_line("sim", sim.port()), "sim"));
  RunResult r = run_gateway({"--check", "--probe", "--config", path});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto oks = lines_starting(r.out, "  ok    backend sim: GET ");
  ASSERT_EQ(oks.size(), 2u) << r.out;
  EXPECT_TRUE(oks[0].starts_with("/health: 200 in ")) << oks[0];
  EXPECT_TRUE(oks[1].starts_with("/v1/models: 200 in ")) << oks[1];
  EXPECT_TRUE(oks[1].ends_with(", models: probe-check-model")) << oks[1];
  // Without --probe nothing is asked of the backend.
  RunResult plain = run_gateway({"--check", "--config", path});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  EXPECT_EQ(plain.out.find("probe ("), std::string::npos) << plain.out;
  EXPECT_TRUE(lines_starting(plain.out, "  ok    backend sim: GET ").empty()) << plain.out;
}

TEST(GatewayConfig, CheckProbeFindsOutWhetherASendPriorityBackendTakesAPriority) {
  SimServer fcfs({"--zero-cost"});
  SimServer priority({"--zero-cost", "--scheduling-policy", "priority"});
  TempDir dir;
  auto probe = [&](int port) {
    const std::string path =
        dir.write("priority.yaml",
                  one_route_config(1, backend_line("sim", port, ", send_priority: true"), "sim"));
    return run_gateway({"--check", "--probe", "--config", path});
  };
  RunResult refused = probe(fcfs.port());
  ASSERT_FALSE(refused.timed_out);
  EXPECT_EQ(refused.exit_code, 1) << refused.out << refused.err;
  const auto fails = lines_starting(refused.out, "  FAIL  backend sim: send_priority: ");
  ASSERT_EQ(fails.size(), 1u) << refused.out;
  EXPECT_NE(fails[0].find("400"), std::string::npos) << fails[0];
  EXPECT_NE(fails[0].find("--scheduling-policy priority"), std::string::npos) << fails[0];
  RunResult taken = probe(priority.port());
  EXPECT_EQ(taken.exit_code, 0) << taken.out << taken.err;
  EXPECT_EQ(lines_starting(taken.out, "  ok    backend sim: send_priority: ").size(), 1u)
      << taken.out;
}

TEST(GatewayConfig, CheckProbeOfAClosedPortFailsWithExit1) {
  const int port = closed_port();
  TempDir dir;
  const std::string path =
      dir.write("closed.yaml", one_route_config(1, backend_line("down", port), "down"));
  // Start-up would not mind (backends may come up later): --check alone passes.
  RunResult plain = run_gateway({"--check", "--config", path});
  EXPECT_EQ(plain.exit_code, 0) << plain.out << plain.err;
  RunResult r = run_gateway({"--check", "--probe", "--config", path});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  const auto fails = lines_starting(r.out, "  FAIL  backend down: GET ");
  ASSERT_EQ(fails.size(), 2u) << r.out;
  EXPECT_TRUE(fails[0].starts_with("/health: connect ")) << fails[0];
  EXPECT_TRUE(fails[1].starts_with("/v1/models: connect ")) << fails[1];
  EXPECT_TRUE(has_line(r.out, "check FAILED: 2 problems")) << r.out;
  EXPECT_EQ(error_lines(r.err).size(), 2u) << r.err;
}

TEST(GatewayConfig, CheckWarnsAboutAV1UrlAndABareNumberDuration) {
  TempDir dir;
  const std::string yaml =
      one_route_config(1, "  - {name: a, url: \"http://127.0.0.1:30001/v1\"}\n", "a",
                       "timeouts:\n  connect: 5\n  idle: 120s\n");
  RunResult r = run_gateway({"--check", "--config", dir.write("warn.yaml", yaml)});
  ASSERT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0) << "warnings do not fail the check: " << r.out << r.err;
  const auto warnings = lines_starting(r.out, "  ");
  bool url = false, connect = false;
  for (const auto& w : warnings) {
    url = url || (w.starts_with("backends[0].url: 'http://127.0.0.1:30001/v1': ") &&
                  w.find("/v1/v1/") != std::string::npos);
    connect = connect || (w.starts_with("timeouts.connect: '5': ") &&
                          w.find("5ms") != std::string::npos && w.ends_with("(line 8, column 12)"));
  }
  EXPECT_TRUE(url) << r.out;
  EXPECT_TRUE(connect) << r.out;
  EXPECT_TRUE(has_line(r.out, "  connect: 5ms")) << r.out;
  EXPECT_TRUE(has_line(r.out, "check OK (2 warnings)")) << r.out;
  EXPECT_EQ(r.out.find("timeouts.idle"), std::string::npos) << "120s is fine: " << r.out;

  // Serving, the gateway logs the same warnings once at start (and starts).
  auto gw = GatewayServer::with_config(yaml);
  const std::string err = gw->stderr_text();
  EXPECT_NE(err.find("timeouts.connect: '5'"), std::string::npos) << err;
  EXPECT_NE(err.find("backends[0].url: 'http://127.0.0.1:30001/v1'"), std::string::npos) << err;
  gw->expect_clean_exit();
}

}  // namespace
}  // namespace llmux::test
