// SPDX-License-Identifier: Apache-2.0
#pragma once
// What every gateway integration test (tests/integration/gateway/) shares: `llmux gateway` as a
// child process with its config and access log in a temporary directory of its own, the config
// snippets the tests build, and the fixtures that start a gateway and check how it ended.
// Loopback only; every wait is bounded.
//
// Not thread-safe: one test thread owns each object.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "support/process.hpp"
#include "support/test_util.hpp"

namespace llmux::test {

/// The repository's source directory (examples/, docs/), from the build.
std::string source_dir();

/// `llmux gateway <args> --access-log DIR/access.log` (unless args name --access-log): the
/// access log always goes to a file, since nothing reads the child's stdout after its ready
/// line. The ready line is {"event":"ready","ports":[P],"port":P,"pid":N}.
class GatewayServer : public ChildProcess {
 public:
  /// The quick form or any other arguments after `llmux gateway`.
  explicit GatewayServer(const std::vector<std::string>& args,
                         std::chrono::milliseconds ready_timeout = std::chrono::seconds(10));
  /// `--config` with `yaml` written to a file in the gateway's own directory (`extra` after it).
  /// Unless `yaml` sets `health_checks` or `outlier_detection` itself, both are turned off: the
  /// tests' own fake backends answer nothing at /health, and a test about one failing backend
  /// should not see it ejected midway. Health tests set them explicitly.
  static std::unique_ptr<GatewayServer> with_config(const std::string& yaml,
                                                    const std::vector<std::string>& extra = {});
  /// Stops the gateway; a sanitizer report in its stderr (ASan, UBSan, TSan, LSan) fails the
  /// current test even when the test did not call expect_clean_exit().
  ~GatewayServer();

  const std::string& access_log_path() const { return access_log_; }
  /// The config file of a gateway started by with_config() (empty otherwise).
  const std::string& config_path() const { return config_path_; }
  /// Replaces that file's text (with with_config()'s health defaults; the file is replaced by a
  /// rename, so a reload never reads half of it). Nothing is signalled.
  void rewrite_config(const std::string& yaml) const;
  /// A file in the gateway's own temporary directory (for a pid file, an access log...).
  std::string dir_path(const std::string& name) const;
  /// The access log's JSON lines so far. A line that is not a JSON object goes to `bad`, or
  /// fails the calling test when `bad` is null.
  std::vector<boost::json::object> access_log(std::vector<std::string>* bad = nullptr) const;
  /// Waits up to `timeout` until the access log has a line whose request_id is `id`; returns
  /// it (empty object when none came). Lines that are not JSON objects fail the calling test.
  boost::json::object wait_access_record(const std::string& request_id,
                                         std::chrono::milliseconds timeout) const;
  /// SIGTERMs the gateway and checks it exited 0 with no sanitizer report: non-fatal gtest
  /// failures otherwise. Call at the end of a test.
  void expect_clean_exit(std::chrono::milliseconds timeout = std::chrono::seconds(10));

 private:
  GatewayServer(std::shared_ptr<TempDir> dir, const std::vector<std::string>& args,
                std::chrono::milliseconds ready_timeout);
  std::shared_ptr<TempDir> dir_;
  std::string access_log_;
  std::string config_path_;
  bool checked_ = false;  // expect_clean_exit() already looked at the exit and stderr
};

/// examples/seed.yaml with server1/server2 at 127.0.0.1:port1/port2, listening on
/// 127.0.0.1:0, `threads` worker threads and the access log left to the command line.
std::string seed_config(int port1, int port2, int threads = 2);
/// The same for another file of examples/ with two backends (e.g. "fleet.yaml").
std::string example_config(const std::string& name, int port1, int port2, int threads = 2);

/// One entry of a config's `backends:` list, newline included:
/// `  - {name: NAME, url: "http://127.0.0.1:PORT"EXTRA}`. `extra` continues the flow mapping and
/// starts with ", " (", pool_idle_timeout: 300ms").
std::string backend_line(const std::string& name, int port, const std::string& extra = "");

/// A whole gateway config: listening on 127.0.0.1:0 with `threads` worker threads, the backends
/// `backend_lines` (backend_line()s, in order) and one catch-all route `all` over `names`
/// ("first, second") with policy first, so a later backend serves only when the ones before it
/// cannot. `extra` is appended at the top level ("timeouts: {drain: 5s}\n").
std::string one_route_config(int threads, const std::string& backend_lines,
                             const std::string& names, const std::string& extra = "");

/// Runs `llmux gateway <args>` to completion (a gateway that starts serving is killed after
/// `timeout`; RunResult::timed_out says so).
RunResult run_gateway(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(10));

/// Checks the gateway still answers an ordinary request end to end: a small POST
/// /v1/completions on a new connection gets 200 (its route must lead to a simulator).
void expect_serves(int gw_port);

/// Prints the gateway's stderr when the current test has failed so far.
void dump_on_failure(const GatewayServer& gw);

/// The value of request header `name` (lower case) in a GatedBackend::Mode::Echo answer
/// ({"method","target","headers":{name:value},"body"}); "" when the backend did not get it.
std::string echoed_header(const boost::json::object& echo, const std::string& name);

/// A GoogleTest fixture base for suites that share one gateway, and whatever backends it needs,
/// per test suite (so one per CTest test, since CTest runs each test in its own process).
/// Derived suites start everything from their SetUpTestSuite() through start() and, when they
/// own backends, reset them in their TearDownTestSuite() after calling this one's (the gateway
/// stops first). A gateway that failed to start fails every test of the suite with the reason;
/// one that died during a test fails that test; a failed test prints the gateway's stderr.
class GatewaySuite : public ::testing::Test {
 protected:
  /// Runs `setup`, which sets gw_ (and the suite's backends); an exception is kept for SetUp().
  static void start(const std::function<void()>& setup) {
    start_error_.clear();
    try {
      setup();
    } catch (const std::exception& e) {
      start_error_ = e.what();
    }
  }
  /// Stops the gateway: a non-zero exit or a sanitizer report fails the suite.
  static void TearDownTestSuite() {
    if (gw_) gw_->expect_clean_exit();
    gw_.reset();
  }
  void SetUp() override { ASSERT_TRUE(gw_) << "setup failed: " << start_error_; }
  void TearDown() override {
    if (!gw_) return;
    EXPECT_TRUE(gw_->alive()) << "the gateway died; stderr:\n" << gw_->stderr_text();
    dump_on_failure(*gw_);
  }
  static int port() { return gw_->port(); }

  static inline std::unique_ptr<GatewayServer> gw_;
  static inline std::string start_error_;
};

/// A GoogleTest fixture base for tests that each start a simulator and a gateway in front of it
/// in their own SetUp(). TearDown() prints the gateway's stderr when the test failed, then stops
/// the gateway with expect_clean_exit() (the simulator after it).
class SimBehindGatewayTest : public ::testing::Test {
 protected:
  void TearDown() override {
    if (gw_) {
      dump_on_failure(*gw_);
      gw_->expect_clean_exit();
    }
  }
  std::unique_ptr<SimServer> sim_;
  std::unique_ptr<GatewayServer> gw_;
};

}  // namespace llmux::test
