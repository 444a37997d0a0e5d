// SPDX-License-Identifier: Apache-2.0
// TLS (issue 15, part 6): a listener with `tls: {cert, key}` serves HTTPS (plain and streamed
// completions through a simulator; a plain-HTTP client gets a 400 that says so, a client that
// never finishes its handshake is closed within timeouts.client_header, and the gateway goes on
// serving), and https:// backends (a second gateway with a TLS listener in front of the
// simulator) are verified against a CA file: the right one serves, a wrong one fails the
// request as a failed connect naming the verification, and the health checks take it out.
//
// The certificates are made by the test (support/tls_cert.hpp); the TLS client is llmux's own
// (http::Connection over http::Stream), verifying the gateway's certificate against them.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "http/client.hpp"
#include "http/stream.hpp"
#include "support/gateway_support.hpp"
#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/test_util.hpp"
#include "support/tls_cert.hpp"

namespace llmux::test {
namespace {

namespace net = boost::asio;
using namespace std::chrono_literals;

constexpr std::string_view kChat =
    R"({"messages":[{"role":"user","content":"hello there"}],"max_tokens":8})";
constexpr std::string_view kChatStream =
    R"({"messages":[{"role":"user","content":"hello there"}],"max_tokens":8,)"
    R"("stream":true})";

/// An HTTPS client of 127.0.0.1:port that trusts `ca_file` (keep-alive).
class HttpsClient {
 public:
  HttpsClient(int port, const std::string& ca_file) {
    std::string why;
    http::ClientOptions opt;
    opt.tls = http::make_client_context(ca_file, true, why);
    EXPECT_TRUE(opt.tls) << why;
    opt.timeouts.total = 10s;
    http::Url url;
    url.tls = true;
    url.host = "127.0.0.1";
    url.port = static_cast<std::uint16_t>(port);
    conn_ = std::make_unique<http::Connection>(ioc_.get_executor(), url, opt);
  }
  http::SimpleResponse post(std::string_view target, std::string_view body) {
    http::RequestSpec req;
    req.method = "POST";
    req.target = target;
    req.body = body;
    http::SimpleResponse out;
    net::co_spawn(
        ioc_, [&]() -> net::awaitable<void> { out = co_await http::fetch(*conn_, req); },
        net::detached);
    ioc_.restart();
    ioc_.run();
    return out;
  }
  std::uint64_t connects() const { return conn_->connects(); }

 private:
  net::io_context ioc_{1};
  std::unique_ptr<http::Connection> conn_;
};

/// A plain TCP connection to 127.0.0.1:port (POSIX), for what an HTTPS client would not send.
struct RawClient {
  explicit RawClient(int port) {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected = ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawClient() { ::close(fd); }
  void send(std::string_view s) const { (void)::send(fd, s.data(), s.size(), MSG_NOSIGNAL); }
  /// Everything the server sends until it closes; nullopt when it has not closed by `timeout`.
  std::optional<std::string> read_until_closed(std::chrono::milliseconds timeout) const {
    std::string got;
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          end - std::chrono::steady_clock::now());
      if (left.count() <= 0) return std::nullopt;
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) return std::nullopt;
      char buf[4096];
      const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) return got;  // closed (or reset)
      got.append(buf, static_cast<std::size_t>(n));
    }
  }
  int fd = -1;
  bool connected = false;
};

std::string tls_listener(const TestCert& c) {
  return "listen: [{address: 127.0.0.1, port: 0, tls: {cert: \"" + c.cert + "\", key: \"" + c.key +
         "\"}}]\n";
}

std::string https_backend(const std::string& name, int port, const std::string& ca_file) {
  return "  - {name: " + name + ", url: \"https://127.0.0.1:" + std::to_string(port) +
         "\", tls: {ca_file: \"" + ca_file + "\"}}\n";
}

/// The suite: the simulator, `front` (HTTPS listener → the simulator) and the certificates.
class GatewayTls : public GatewaySuite {
 protected:
  static void SetUpTestSuite() {
    start([] {
      dir_ = std::make_unique<TempDir>();
      good_ = make_self_signed_cert(*dir_, "good");
      other_ = make_self_signed_cert(*dir_, "other");
      sim_ = std::make_unique<SimServer>(std::vector<std::string>{"--time-scale", "100"});
      // Listener config replaced by the TLS one: one_route_config's listen line comes first.
      std::string yaml = one_route_config(2, backend_line("sim", sim_->port()), "sim",
                                          "timeouts: {client_header: 1s}\n");
      yaml = tls_listener(good_) + yaml.substr(yaml.find('\n') + 1);
      gw_ = GatewayServer::with_config(yaml);
    });
  }
  static void TearDownTestSuite() {
    GatewaySuite::TearDownTestSuite();
    sim_.reset();
    dir_.reset();
  }
  static inline std::unique_ptr<TempDir> dir_;
  static inline std::unique_ptr<SimServer> sim_;
  static inline TestCert good_, other_;
};

TEST_F(GatewayTls, HttpsListenerServesCompletionsAndStreamsOnOneConnection) {
  HttpsClient c(port(), good_.cert);
  const auto r = c.post("/v1/chat/completions", kChat);
  ASSERT_EQ(r.result.failure, http::Failure::none) << r.result.message;
  EXPECT_EQ(r.result.status, 200) << r.body;
  EXPECT_NE(r.body.find("\"choices\""), std::string::npos) << r.body;

  const auto s = c.post("/v1/chat/completions", kChatStream);
  ASSERT_EQ(s.result.failure, http::Failure::none) << s.result.message;
  EXPECT_EQ(s.result.status, 200);
  EXPECT_EQ(s.result.content_type.rfind("text/event-stream", 0), 0u) << s.result.content_type;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;
  EXPECT_EQ(c.connects(), 1u) << "the HTTPS connection was not kept alive";
}

TEST_F(GatewayTls, ClientThatDoesNotTrustTheCertificateFailsItsHandshake) {
  HttpsClient c(port(), other_.cert);
  const auto r = c.post("/v1/chat/completions", kChat);
  EXPECT_EQ(r.result.failure, http::Failure::connect);
  EXPECT_NE(r.result.message.find("certificate verify failed"), std::string::npos)
      << r.result.message;
  EXPECT_EQ(HttpsClient(port(), good_.cert).post("/v1/chat/completions", kChat).result.status, 200);
}

TEST_F(GatewayTls, PlainHttpClientGetsA400SayingHttpsAndTheGatewayGoesOn) {
  RawClient raw(port());
  ASSERT_TRUE(raw.connected);
  raw.send("GET /health HTTP/1.1\r\nHost: x\r\n\r\n");
  const auto got = raw.read_until_closed(5s);
  ASSERT_TRUE(got) << "the gateway did not close a plain-HTTP connection to its TLS port";
  EXPECT_EQ(got->rfind("HTTP/1.1 400", 0), 0u) << *got;
  EXPECT_NE(got->find("HTTPS"), std::string::npos) << *got;
  EXPECT_EQ(HttpsClient(port(), good_.cert).post("/v1/chat/completions", kChat).result.status, 200);
}

TEST_F(GatewayTls, HandshakeThatNeverCompletesIsClosedWithinClientHeader) {
  RawClient silent(port());
  ASSERT_TRUE(silent.connected);
  RawClient partial(port());
  ASSERT_TRUE(partial.connected);
  partial.send(std::string("\x16\x03\x01\x00\xff", 5));  // a ClientHello's header, no body
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.read_until_closed(5s)) << "a silent client was never closed";
  EXPECT_TRUE(partial.read_until_closed(5s)) << "a half handshake was never closed";
  EXPECT_LT(std::chrono::steady_clock::now() - start, 4s);
  EXPECT_EQ(HttpsClient(port(), good_.cert).post("/v1/chat/completions", kChat).result.status, 200);
}

TEST_F(GatewayTls, BenchMeasuresAnHttpsGatewayTrustingItsCaFile) {
  const std::string url = "https://127.0.0.1:" + std::to_string(port());
  auto bench = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{llmux_binary(),
                                  "bench",
                                  "run",
                                  "--url",
                                  url,
                                  "--endpoint",
                                  "chat",
                                  "--num-requests",
                                  "6",
                                  "--concurrency",
                                  "2",
                                  "--output-len",
                                  "4",
                                  "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_to_completion(args, 60s);
  };
  TempDir out;
  const RunResult ok = bench({"--ca-file", good_.cert, "--out", out.path()});
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto doc = parse_json(read_text_file(out.path() + "/run.json"));
  const auto& agg = doc.at("levels").as_array().at(0).at("aggregate");
  EXPECT_EQ(agg.at("ok").as_int64(), 6) << ok.out;
  // The system's store does not know the test's CA: the model lookup fails, saying why.
  const RunResult untrusted = bench({});
  EXPECT_NE(untrusted.exit_code, 0);
  EXPECT_NE(untrusted.err.find("certificate verify failed"), std::string::npos) << untrusted.err;
  EXPECT_EQ(bench({"--insecure"}).exit_code, 0);
  const RunResult plain_flags =
      run_to_completion({llmux_binary(), "bench", "run", "--url", "http://127.0.0.1:1", "--model",
                         "m", "--insecure", "--no-progress"},
                        30s);
  EXPECT_EQ(plain_flags.exit_code, 2);
  EXPECT_NE(plain_flags.err.find("for https:// URLs"), std::string::npos) << plain_flags.err;
}

TEST_F(GatewayTls, HttpsBackendVerifiedWithItsCaFileServesPlainAndStreamed) {
  auto back = GatewayServer::with_config(
      one_route_config(2, https_backend("tls", port(), good_.cert), "tls"));
  HttpClient c(back->port());
  const auto r = c.post("/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.header("x-llmux-backend"), "tls");
  EXPECT_NE(r.body.find("\"choices\""), std::string::npos) << r.body;
  const auto s = c.post("/v1/chat/completions", kChatStream);
  EXPECT_EQ(s.status, 200) << s.body;
  EXPECT_NE(s.body.find("data: [DONE]"), std::string::npos) << s.body;
  // Pooled: the second request reused the first's TLS connection (a new one would be a second
  // handshake; the simulator's keep-alive counters are not visible here, the gateway's are).
  const auto again = c.post("/v1/chat/completions", kChat);
  EXPECT_EQ(again.status, 200);
  dump_on_failure(*back);
  back->expect_clean_exit();
}

TEST_F(GatewayTls, HttpsBackendWithTheWrongCaFailsNamingTheVerificationAndIsUnhealthy) {
  // Health checks off (with_config's default): the request itself meets the failure, a failed
  // connect (nothing was sent: another backend would be tried), so with no other backend the
  // gateway's "No backend reachable" 503, naming the verification failure.
  auto unchecked = GatewayServer::with_config(
      one_route_config(2, https_backend("tls", port(), other_.cert), "tls"));
  const auto r = HttpClient(unchecked->port()).post("/v1/chat/completions", kChat);
  EXPECT_EQ(r.status, 503) << r.body;
  EXPECT_NE(r.body.find("TLS handshake with tls"), std::string::npos) << r.body;
  EXPECT_NE(r.body.find("certificate verify failed"), std::string::npos) << r.body;
  dump_on_failure(*unchecked);
  unchecked->expect_clean_exit();
  // Health checks on: the backend is unhealthy, and the log says why.
  auto back = GatewayServer::with_config(
      "health_checks: {interval: 200ms, timeout: 150ms, unhealthy_threshold: 1}\n" +
      one_route_config(2, https_backend("tls", port(), other_.cert), "tls"));
  EXPECT_TRUE(poll_until(
      [&] {
        const auto h = HttpClient(back->port()).get("/health");
        return h.status == 503 && h.body.find("unhealthy") != std::string::npos;
      },
      5s))
      << HttpClient(back->port()).get("/health").body;
  EXPECT_NE(back->stderr_text().find("certificate verify failed"), std::string::npos)
      << back->stderr_text();
  dump_on_failure(*back);
  back->expect_clean_exit();
}

TEST(GatewayTlsConfig, BadCertificateFilesAreAClearErrorAtStart) {
  TempDir dir;
  const TestCert a = make_self_signed_cert(dir, "a");
  const TestCert b = make_self_signed_cert(dir, "b");
  const std::string rest = one_route_config(1, backend_line("x", 1), "x");
  const std::string body = rest.substr(rest.find('\n') + 1);
  // A key that is not the certificate's.
  const std::string mismatched =
      dir.write("mismatched.yaml", "listen: [{address: 127.0.0.1, port: 0, tls: {cert: \"" +
                                       a.cert + "\", key: \"" + b.key + "\"}}]\n" + body);
  RunResult r = run_gateway({"--config", mismatched, "--check"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("mismatch"), std::string::npos) << r.out << r.err;
  // A missing file.
  const std::string missing =
      dir.write("missing.yaml", "listen: [{address: 127.0.0.1, port: 0, tls: {cert: \"" +
                                    dir.path() + "/nope.crt\", key: \"" + a.key + "\"}}]\n" + body);
  r = run_gateway({"--config", missing});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE((r.out + r.err).find("nope.crt"), std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace llmux::test
