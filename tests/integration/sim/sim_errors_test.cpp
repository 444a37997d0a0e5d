// SPDX-License-Identifier: Apache-2.0
// Every bad input the simulator must refuse (with vLLM's statuses, envelopes and messages) and
// survive, plus the fault injection that benchmark and gateway tests rely on.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <memory>
#include <regex>
#include <string>

#include "support/http_client.hpp"
#include "support/process.hpp"
#include "support/sim_suite.hpp"
#include "support/test_util.hpp"

namespace llmux::test {
namespace {

namespace json = boost::json;
using namespace std::chrono_literals;

struct BadJson {
  const char* target;
  const char* body;
  int status;
  const char* message_contains;  // "" = any
};

// Requests with a bad body; each must get `status` in the OpenAI error envelope.
const BadJson kBadJson[] = {
    {"/v1/completions", "{", 400, ""},
    {"/v1/completions", "", 400, ""},
    {"/v1/completions", "{\"prompt\":\"x\",}", 400, ""},
    {"/v1/completions", "[1,2]", 400, ""},
    {"/v1/completions", "\"a string\"", 400, ""},
    {"/v1/completions", "42", 400, ""},
    {"/v1/completions", "null", 400, ""},
    {"/v1/completions", "{}", 400, "prompt"},
    {"/v1/completions", R"({"prompt":null})", 400, "prompt"},
    {"/v1/completions", R"({"prompt":""})", 400, ""},
    {"/v1/completions", R"({"prompt":5})", 400, "prompt"},
    {"/v1/completions", R"({"prompt":{"a":1}})", 400, "prompt"},
    {"/v1/completions", R"({"prompt":[-1]})", 400, "prompt"},
    {"/v1/completions", R"({"prompt":"x","max_tokens":"x"})", 400, "max_tokens"},
    {"/v1/completions", R"({"prompt":"x","max_tokens":1.5})", 400, "max_tokens"},
    {"/v1/completions", R"({"prompt":"x","max_tokens":0})", 400, "max_tokens"},
    {"/v1/completions", R"({"prompt":"x","max_tokens":-3})", 400, "max_tokens"},
    {"/v1/completions", R"({"prompt":"x","stream":"yes"})", 400, "stream"},
    {"/v1/completions", R"({"prompt":"x","stream":1})", 400, "stream"},
    {"/v1/completions", R"({"prompt":"x","temperature":"hot"})", 400, "temperature"},
    {"/v1/completions", R"({"prompt":"x","temperature":-1})", 400, "temperature"},
    {"/v1/completions", R"({"prompt":"x","ignore_eos":"no"})", 400, "ignore_eos"},
    {"/v1/completions", R"({"prompt":"x","model":7})", 400, "model"},
    {"/v1/completions", R"({"prompt":"x","stream_options":{"include_usage":true}})", 400,
     "Stream options can only be defined when `stream=True`."},
    {"/v1/completions", R"({"prompt":"x","stream":false,"stream_options":{}})", 400,
     "Stream options can only be defined when `stream=True`."},
    {"/v1/completions", R"({"prompt":"x","stream":true,"stream_options":5})", 400,
     "stream_options"},
    {"/v1/chat/completions", "{", 400, ""},
    {"/v1/chat/completions", "[]", 400, ""},
    {"/v1/chat/completions", "{}", 400, "messages"},
    {"/v1/chat/completions", R"({"messages":5})", 400, "messages"},
    {"/v1/chat/completions", R"({"messages":"hi"})", 400, "messages"},
    {"/v1/chat/completions", R"({"messages":[]})", 400, "messages"},
    {"/v1/chat/completions", R"({"messages":[5]})", 400, "messages"},
    {"/v1/chat/completions", R"({"messages":[{"content":"no role"}]})", 400, "role"},
    {"/v1/chat/completions", R"({"messages":[{"role":"user","content":5}]})", 400, "content"},
    {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})", 400,
     "stream"},
    {"/v1/chat/completions", R"({"messages":[{"role":"user","content":"x"}],"max_tokens":"x"})",
     400, "max_tokens"},
    {"/v1/chat/completions",
     R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})", 400,
     "Stream options can only be defined when `stream=True`."},
    {"/v1/responses", "{", 400, ""},
    {"/v1/responses", "[]", 400, ""},
    {"/v1/responses", "{}", 400, "input"},
    {"/v1/responses", R"({"input":5})", 400, "input"},
    {"/v1/responses", R"({"input":"x","stream":"yes"})", 400, "stream"},
    {"/v1/responses", R"({"input":"x","max_output_tokens":"x"})", 400, "max_output_tokens"},
    {"/v1/responses", R"({"input":"x","background":true,"store":false})", 400,
     "background can only be used when `store` is true"},
    {"/v1/responses", R"({"input":"x","previous_response_id":5})", 400, "previous_response_id"},
};

// Malformed HTTP on a raw connection; each must get `status` and a closed connection.
struct BadHttp {
  const char* name;
  std::string bytes;
  int status;
};

std::vector<BadHttp> bad_http() {
  return {
      {"garbage", "GARBAGE\r\n\r\n", 400},
      {"binary", std::string("\x00\x01\x02\xff\xfe\r\n\r\n", 9), 400},
      {"bad version", "GET /health HTTP/9.9\r\nHost: x\r\n\r\n", 400},
      {"no colon header", "GET /health HTTP/1.1\r\nHost x\r\n\r\n", 400},
      {"content-length and transfer-encoding",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
       400},
      {"bad content-length",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n", 400},
      {"two content-lengths",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n"
       "\r\n{}",
       400},
      {"bad chunk size",
       "POST /v1/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n"
       "hello\r\n0\r\n\r\n",
       400},
      {"header over 64 KiB",
       "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n",
       431},
  };
}

void expect_error(const Response& r, int status, std::string_view what) {
  EXPECT_EQ(r.status, status) << what << " -> " << r.body;
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, status, &why)) << what << ": " << why;
}

// A plain POSIX socket to 127.0.0.1:port for the requests a client library would not make, with
// every wait bounded by poll() (and SO_SNDTIMEO/SO_RCVTIMEO as a second guard).
class PosixClient {
 public:
  explicit PosixClient(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd_ < 0) {
      error_ = std::string("socket: ") + std::strerror(errno);
      return;
    }
    const timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      error_ = std::string("connect: ") + std::strerror(errno);
      ::close(fd_);
      fd_ = -1;
    }
  }
  ~PosixClient() {
    if (fd_ >= 0) ::close(fd_);
  }
  PosixClient(const PosixClient&) = delete;
  PosixClient& operator=(const PosixClient&) = delete;

  bool ok() const { return fd_ >= 0; }
  /// What the last failed operation saw (errno text, "timeout", ...).
  const std::string& error() const { return error_; }

  /// Sends all of `bytes` by `deadline`; false (with error()) on a failure or the deadline.
  bool send_all(std::string_view bytes, std::chrono::steady_clock::time_point deadline) {
    for (int guard = 0; !bytes.empty() && guard < 1'000'000; ++guard) {
      if (!wait(POLLOUT, deadline)) return false;
      const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n <= 0) {
        error_ = n < 0 ? std::strerror(errno) : "send returned 0";
        return false;
      }
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    if (!bytes.empty()) error_ = "too many sends";
    return bytes.empty();
  }

  /// Reads until `done(bytes so far)`, the peer's EOF (*eof = true), an error or `deadline`.
  std::string read_until(const std::function<bool(std::string_view)>& done,
                         std::chrono::steady_clock::time_point deadline, bool* eof = nullptr) {
    std::string out;
    if (eof) *eof = false;
    char buf[16384];
    for (int guard = 0; guard < 100'000 && !done(out); ++guard) {
      if (!wait(POLLIN, deadline)) break;
      const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
      if (n == 0 && eof) *eof = true;
      if (n <= 0) {
        if (n < 0) error_ = std::strerror(errno);
        break;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }

 private:
  bool wait(short events, std::chrono::steady_clock::time_point deadline) {
    for (int guard = 0; guard < 10'000; ++guard) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                            deadline - std::chrono::steady_clock::now())
                            .count();
      if (left <= 0) break;
      pollfd p{fd_, events, 0};
      const int r = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000)));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        error_ = std::string("poll: ") + std::strerror(errno);
        return false;
      }
      if (r > 0) return true;  // ready, or an error/hang-up the next call reports
    }
    error_ = "timeout";
    return false;
  }

  int fd_ = -1;
  std::string error_;
};

// True once `bytes` hold a whole response: its header and its Content-Length body.
bool whole_response(std::string_view bytes) {
  const auto hdr_end = bytes.find("\r\n\r\n");
  if (hdr_end == std::string_view::npos) return false;
  const Response r = parse_raw_response(bytes);
  const std::string cl = r.header("content-length");
  return !cl.empty() && bytes.size() - (hdr_end + 4) >= std::stoull(cl);
}

// ---------------------------------------------------------------------------------------------

class SimErrors : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--max-body-bytes", "4096"}); }
};

TEST_F(SimErrors, BadJsonBodiesAre400) {
  HttpClient c(port());
  for (const auto& b : kBadJson) {
    SCOPED_TRACE(std::string(b.target) + " " + b.body);
    Response r = c.post(b.target, b.body);
    expect_error(r, b.status, b.body);
    if (*b.message_contains) {
      EXPECT_NE(error_message(r.body).find(b.message_contains), std::string::npos)
          << "message: " << error_message(r.body);
    }
  }
  // All of those went over one kept-alive connection: errors do not close it.
  EXPECT_EQ(c.connections_opened(), 1);
}

TEST_F(SimErrors, SchemaErrorsUseBadRequestType) {
  HttpClient c(port());
  Response r = c.post("/v1/completions", "{");
  EXPECT_EQ(error_type(r.body), "Bad Request") << r.body;
  Response so = c.post("/v1/chat/completions",
                       R"({"messages":[{"role":"user","content":"x"}],"stream_options":{}})");
  EXPECT_EQ(error_type(so.body), "Bad Request") << so.body;
}

TEST_F(SimErrors, UnknownModelIs404OnEveryEndpoint) {
  HttpClient c(port());
  const std::pair<const char*, const char*> cases[] = {
      {"/v1/completions", R"({"model":"x","prompt":"hi"})"},
      {"/v1/chat/completions", R"({"model":"x","messages":[{"role":"user","content":"hi"}]})"},
      {"/v1/responses", R"({"model":"x","input":"hi"})"},
      {"/v1/completions", R"({"model":"x","prompt":"hi","stream":true})"},
      // vLLM checks the model before the stored response.
      {"/v1/responses", R"({"model":"x","input":"hi","previous_response_id":"resp_nope"})"},
  };
  for (const auto& [target, body] : cases) {
    SCOPED_TRACE(body);
    Response r = c.post(target, body);
    expect_error(r, 404, body);
    EXPECT_EQ(error_message(r.body), "The model `x` does not exist.");
    EXPECT_EQ(error_type(r.body), "NotFoundError");
  }
}

// vLLM's FastAPI app answers an unknown path and a wrong method with Starlette's own bodies, not
// the OpenAI error shape: vllm/entrypoints/openai/api_server.py registers its HTTPException
// handler for fastapi.HTTPException, a subclass of the starlette.exceptions.HTTPException that
// routing raises, so FastAPI's default handler answers {"detail": ...} (405 with Allow).
TEST_F(SimErrors, UnknownPathAndMethod) {
  HttpClient c(port());
  auto expect_detail = [](const Response& r, int status, std::string_view detail,
                          std::string_view allow, const char* what) {
    SCOPED_TRACE(what);
    EXPECT_EQ(r.status, status) << r.body;
    EXPECT_EQ(r.body, std::string(R"({"detail":")") + std::string(detail) + "\"}");
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_EQ(r.header("allow"), allow);
  };
  expect_detail(c.get("/nope"), 404, "Not Found", "", "GET /nope");
  expect_detail(c.post("/v1/embeddings", "{}"), 404, "Not Found", "", "POST /v1/embeddings");
  expect_detail(c.post("/v1/responses/a/b/c", "{}"), 404, "Not Found", "", "/v1/responses/a/b/c");
  expect_detail(c.get("/v1/completions"), 405, "Method Not Allowed", "POST", "GET /v1/completions");
  expect_detail(c.request("DELETE", "/v1/chat/completions"), 405, "Method Not Allowed", "POST",
                "DELETE /v1/chat/completions");
  expect_detail(c.post("/v1/models", "{}"), 405, "Method Not Allowed", "GET", "POST /v1/models");
  // The connection survives all of them.
  EXPECT_EQ(c.get("/v1/models").status, 200);
  EXPECT_EQ(c.connections_opened(), 1);
}

TEST_F(SimErrors, BodyOverLimitIs413) {
  RawConnection raw(port());
  const std::string body = R"({"prompt":")" + std::string(8192, 'a') + R"("})";
  ASSERT_TRUE(
      raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
               "application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body));
  Response r = parse_raw_response(raw.read_response(5s));
  expect_error(r, 413, "8 KiB body over a 4 KiB limit");
  // A body just under the limit is fine.
  HttpClient c(port());
  const std::string ok_body = R"({"max_tokens":1,"prompt":")" + std::string(4000, 'a') + R"("})";
  ASSERT_LE(ok_body.size(), 4096u);
  EXPECT_EQ(c.post("/v1/completions", ok_body).status, 200);
}

TEST_F(SimErrors, MalformedHttpIs400AndServerServesNextConnection) {
  for (const auto& b : bad_http()) {
    SCOPED_TRACE(b.name);
    RawConnection raw(port());
    ASSERT_TRUE(raw.send(b.bytes));
    bool closed = false;
    const std::string got = raw.read_until_close(5s, &closed);
    EXPECT_TRUE(closed) << "the server must close a connection after malformed HTTP";
    Response r = parse_raw_response(got);
    EXPECT_EQ(r.status, b.status) << got;
    std::string why;
    EXPECT_TRUE(is_openai_error(r.body, b.status, &why)) << why;
    HttpClient c(port());
    EXPECT_EQ(c.get("/health").status, 200);
  }
}

TEST_F(SimErrors, AbruptClientsDoNotHurt) {
  {  // connect and leave
    RawConnection raw(port());
  }
  {  // half a header
    RawConnection raw(port());
    ASSERT_TRUE(raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nConte"));
  }
  {  // a header promising more body than sent, then a close
    RawConnection raw(port());
    ASSERT_TRUE(
        raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n"
                 "\r\n{\"prompt\":"));
    raw.shutdown_write();
    bool closed = false;
    raw.read_until_close(5s, &closed);
    EXPECT_TRUE(closed);
  }
  HttpClient c(port());
  EXPECT_EQ(c.get("/health").status, 200);
}

// A client that writes the whole body before reading (as Python's http.client does) must get the
// 413, not a reset: the server answers, then reads and drops the rest of the body before closing.
TEST_F(SimErrors, OversizedBodyIs413EvenWhenTheClientSendsItAll) {
  constexpr std::size_t kBody = 40u << 20;  // the limit is 4096; far over the socket buffers
  PosixClient cl(port());
  ASSERT_TRUE(cl.ok()) << cl.error();
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  ASSERT_TRUE(
      cl.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                  "Content-Type: application/json\r\nContent-Length: " +
                      std::to_string(kBody) + "\r\n\r\n",
                  deadline))
      << cl.error();
  const std::string chunk(64 * 1024, 'x');
  std::size_t sent = 0;
  while (sent < kBody) {
    const std::size_t n = std::min(chunk.size(), kBody - sent);
    ASSERT_TRUE(cl.send_all(std::string_view(chunk).substr(0, n), deadline))
        << "writing the body failed after " << sent << " of " << kBody << " bytes: " << cl.error();
    sent += n;
  }
  bool eof = false;
  const std::string got =
      cl.read_until(whole_response, std::chrono::steady_clock::now() + 10s, &eof);
  ASSERT_TRUE(whole_response(got)) << "no complete response (" << cl.error() << "): " << got;
  const Response r = parse_raw_response(got);
  EXPECT_EQ(r.status, 413) << got;
  std::string why;
  EXPECT_TRUE(is_openai_error(r.body, 413, &why)) << why << ": " << r.body;
  EXPECT_EQ(r.header("connection"), "close") << got;
  ASSERT_TRUE(sim_->alive()) << sim_->stderr_text();
  HttpClient c(port());
  EXPECT_EQ(c.get("/health").status, 200);
}

// `100 Continue` goes only to HTTP/1.1 clients (an HTTP/1.0 one does not know it) and only while
// the body is still to come.
TEST_F(SimErrors, ExpectContinueOnlyForHttp11WithBodyToCome) {
  const std::string body = R"({"prompt":"x","max_tokens":1})";
  // Stops at the first whole response, interim (1xx, header only) or final.
  const auto is_final = [](std::string_view b) {
    return whole_response(b) || (b.find("\r\n\r\n") != std::string_view::npos &&
                                 parse_raw_response(b).status / 100 == 1);
  };
  {  // HTTP/1.0: the first bytes are the final response's status line
    SCOPED_TRACE("HTTP/1.0");
    PosixClient cl(port());
    ASSERT_TRUE(cl.ok()) << cl.error();
    ASSERT_TRUE(
        cl.send_all("POST /v1/completions HTTP/1.0\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                    "Content-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n" + body,
                    std::chrono::steady_clock::now() + 5s))
        << cl.error();
    const std::string got = cl.read_until(is_final, std::chrono::steady_clock::now() + 10s);
    EXPECT_TRUE(got.starts_with("HTTP/1.0 200 ")) << got;
    EXPECT_EQ(got.find("100 Continue"), std::string::npos) << got;
    EXPECT_TRUE(whole_response(got)) << got;
  }
  {  // HTTP/1.1 with no body to come (Content-Length: 0): no 100 either
    SCOPED_TRACE("HTTP/1.1, empty body");
    PosixClient cl(port());
    ASSERT_TRUE(cl.ok()) << cl.error();
    ASSERT_TRUE(
        cl.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                    "Content-Length: 0\r\n\r\n",
                    std::chrono::steady_clock::now() + 5s))
        << cl.error();
    const std::string got = cl.read_until(is_final, std::chrono::steady_clock::now() + 10s);
    EXPECT_TRUE(got.starts_with("HTTP/1.1 400 ")) << got;
    EXPECT_TRUE(whole_response(got)) << got;
  }
  {  // HTTP/1.1 that waits for it: 100 Continue, then the body, then the answer
    SCOPED_TRACE("HTTP/1.1, waiting");
    PosixClient cl(port());
    ASSERT_TRUE(cl.ok()) << cl.error();
    ASSERT_TRUE(
        cl.send_all("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                    "Content-Type: application/json\r\nExpect: 100-continue\r\n"
                    "Content-Length: " +
                        std::to_string(body.size()) + "\r\n\r\n",
                    std::chrono::steady_clock::now() + 5s))
        << cl.error();
    const std::string interim = cl.read_until(
        [](std::string_view b) { return b.find("\r\n\r\n") != std::string_view::npos; },
        std::chrono::steady_clock::now() + 10s);
    EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
    ASSERT_TRUE(cl.send_all(body, std::chrono::steady_clock::now() + 5s)) << cl.error();
    const std::string got = cl.read_until(is_final, std::chrono::steady_clock::now() + 10s);
    EXPECT_TRUE(got.starts_with("HTTP/1.1 200 ")) << got;
    EXPECT_TRUE(whole_response(got)) << got;
  }
}

TEST_F(SimErrors, ServerSurvivesEveryBadInput) {
  {
    HttpClient c(port());
    for (const auto& b : kBadJson) {
      Response r = c.post(b.target, b.body);
      EXPECT_EQ(r.status, b.status) << b.target << " " << b.body;
    }
    EXPECT_EQ(c.post("/v1/completions", R"({"model":"x","prompt":"hi"})").status, 404);
    EXPECT_EQ(c.get("/no/such/path").status, 404);
  }
  for (const auto& b : bad_http()) {
    RawConnection raw(port());
    ASSERT_TRUE(raw.send(b.bytes));
    bool closed = false;
    const std::string got = raw.read_until_close(5s, &closed);
    EXPECT_EQ(parse_raw_response(got).status, b.status) << b.name;
  }
  {
    RawConnection raw(port());
    const std::string body(8192, 'x');
    raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " +
             std::to_string(body.size()) + "\r\n\r\n" + body);
    EXPECT_EQ(parse_raw_response(raw.read_response(5s)).status, 413);
  }
  ASSERT_TRUE(sim_->alive()) << sim_->stderr_text();
  HttpClient c(port());
  Response h = c.get("/health");
  EXPECT_EQ(h.status, 200);
  // And it still generates.
  Response g = c.post("/v1/completions", R"({"prompt":"still alive?","max_tokens":3})");
  EXPECT_EQ(g.status, 200) << g.body;
}

// ---------------------------------------------------------------------------------------------
// Context length (vLLM's messages, per endpoint)

class SimContext : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--max-model-len", "64"}); }
};

std::string words(int n) {
  std::string s = "ab";
  for (int i = 1; i < n; ++i) s += " ab";
  return s;
}

TEST_F(SimContext, CompletionsPromptTooLong) {
  HttpClient c(port());
  const std::string prompt = words(100);
  const auto p = count_tokens(prompt);
  ASSERT_EQ(p, 100u);
  Response r = c.post("/v1/completions", json::serialize(json::object{{"prompt", prompt}}));
  expect_error(r, 400, "long prompt");
  EXPECT_EQ(error_message(r.body),
            "This model's maximum context length is 64 tokens. However, your request has 100 "
            "input tokens. Please reduce the length of the input messages.");
  EXPECT_EQ(error_type(r.body), "BadRequestError");
}

TEST_F(SimContext, CompletionsMaxTokensTooLarge) {
  HttpClient c(port());
  const std::string prompt = words(10);
  Response r = c.post("/v1/completions",
                      json::serialize(json::object{{"prompt", prompt}, {"max_tokens", 100}}));
  expect_error(r, 400, "max_tokens 100");
  EXPECT_EQ(error_message(r.body),
            "'max_tokens' or 'max_completion_tokens' is too large: 100. This model's maximum "
            "context length is 64 tokens and your request has 10 input tokens (100 > 64 - 10).");
  // Exactly at the limit is fine.
  Response ok = c.post("/v1/completions",
                       json::serialize(json::object{{"prompt", prompt}, {"max_tokens", 54}}));
  EXPECT_EQ(ok.status, 200) << ok.body;
}

TEST_F(SimContext, ChatMessagesEndInNone) {
  HttpClient c(port());
  Response r = c.post(
      "/v1/chat/completions",
      json::serialize(json::object{
          {"messages", json::array{json::object{{"role", "user"}, {"content", words(100)}}}}}));
  expect_error(r, 400, "long chat");
  const std::regex want(
      "This model's maximum context length is 64 tokens\\. However, your request has [0-9]+ "
      "input tokens\\. Please reduce the length of the input messages\\. None");
  EXPECT_TRUE(std::regex_match(error_message(r.body), want)) << error_message(r.body);

  Response m =
      c.post("/v1/chat/completions",
             R"({"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1000})");
  expect_error(m, 400, "max_completion_tokens 1000");
  const std::regex want_max(
      "'max_tokens' or 'max_completion_tokens' is too large: 1000\\. This model's maximum "
      "context length is 64 tokens and your request has ([0-9]+) input tokens \\(1000 > 64 - "
      "\\1\\)\\. None");
  EXPECT_TRUE(std::regex_match(error_message(m.body), want_max)) << error_message(m.body);
}

TEST_F(SimContext, ResponsesPromptTooLongAndClamp) {
  HttpClient c(port());
  Response r = c.post("/v1/responses", json::serialize(json::object{{"input", words(100)}}));
  expect_error(r, 400, "long input");
  const std::regex want(
      "The engine prompt length [0-9]+ exceeds the max_model_len 64\\. Please reduce prompt\\.");
  EXPECT_TRUE(std::regex_match(error_message(r.body), want)) << error_message(r.body);
  EXPECT_EQ(error_type(r.body), "invalid_request_error");
  // max_output_tokens over the context is clamped, not refused.
  Response ok = c.post("/v1/responses", R"({"input":"hi","max_output_tokens":1000})");
  ASSERT_EQ(ok.status, 200) << ok.body;
  auto o = parse_json(ok.body).as_object();
  const auto in = o.at("usage").at("input_tokens").to_number<std::int64_t>();
  EXPECT_EQ(o.at("max_output_tokens").to_number<std::int64_t>(), 64 - in);
}

// ---------------------------------------------------------------------------------------------
// Faults

class SimFaults : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--time-scale", "50"}); }
};

const char* kChatStream =
    R"({"messages":[{"role":"user","content":"fault me"}],"max_tokens":100,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}})";

TEST_F(SimFaults, ErrorHeaderGivesThatStatus) {
  HttpClient c(port());
  for (int status : {503, 429, 500}) {
    const Headers h{{"X-Llmux-Fault", "error=" + std::to_string(status)}};
    expect_error(c.post("/v1/completions", R"({"prompt":"x"})", h), status, "completions");
    expect_error(c.post("/v1/chat/completions", kChatStream, h), status, "chat stream");
    expect_error(c.post("/v1/responses", R"({"input":"x"})", h), status, "responses");
  }
  // Without the header all is well again.
  EXPECT_EQ(c.post("/v1/completions", R"({"prompt":"x","max_tokens":1})").status, 200);
}

TEST_F(SimFaults, CloseAfterThreeTokens) {
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", kChatStream,
                                   {{"X-Llmux-Fault", "close-after=3"}});
  ASSERT_EQ(s->status(), 200);
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::Closed) << to_string(r.end) << "\n" << r.raw();
  ASSERT_EQ(r.events.size(), 4u) << r.raw();  // role frame + 3 tokens, no usage, no [DONE]
  for (std::size_t i = 1; i < r.events.size(); ++i) {
    auto o = parse_json(r.events[i].data).as_object();
    EXPECT_EQ(count_tokens(o.at("choices").at(0).at("delta").at("content").as_string()), 1u);
    EXPECT_TRUE(o.at("choices").at(0).at("finish_reason").is_null());
  }
  EXPECT_EQ(r.raw().find("[DONE]"), std::string::npos);
}

TEST_F(SimFaults, CloseAfterOnCompletionsAndNonStreaming) {
  auto s =
      StreamingResponse::open(port(), "POST", "/v1/completions",
                              R"({"prompt":"x","max_tokens":100,"ignore_eos":true,"stream":true})",
                              {{"X-Llmux-Fault", "close-after=5"}});
  SseResult r = read_sse(*s);
  EXPECT_EQ(r.end, ReadStatus::Closed);
  EXPECT_EQ(r.events.size(), 5u) << r.raw();
  // Non-streaming: the connection closes with no response at all.
  RawConnection raw(port());
  const std::string body = R"({"prompt":"x","max_tokens":100,"ignore_eos":true})";
  ASSERT_TRUE(
      raw.send("POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Llmux-Fault: "
               "close-after=5\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body));
  bool closed = false;
  const std::string got = raw.read_until_close(5s, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(got, "");
}

TEST_F(SimFaults, StallAfterTwoTokens) {
  auto s = StreamingResponse::open(port(), "POST", "/v1/chat/completions", kChatStream,
                                   {{"X-Llmux-Fault", "stall-after=2"}});
  ASSERT_EQ(s->status(), 200);
  // 100 tokens at this time scale take well under 100 ms; 500 ms of silence is a stall.
  SseResult r = read_sse(*s, SIZE_MAX, 500ms, 10s);
  EXPECT_EQ(r.end, ReadStatus::Timeout) << to_string(r.end) << "\n" << r.raw();
  EXPECT_EQ(r.events.size(), 3u) << r.raw();  // role + 2 tokens
  EXPECT_EQ(r.raw().find("[DONE]"), std::string::npos);
  // The stalled sequence no longer occupies the engine; the server serves others.
  HttpClient c(port());
  std::string m;
  EXPECT_TRUE(poll_until(
      [&] {
        m = c.get("/metrics").body;
        return metric_value(m, "vllm:num_requests_running").value_or(-1) == 0;
      },
      5s))
      << m;
  EXPECT_EQ(c.post("/v1/completions", R"({"prompt":"x","max_tokens":2})").status, 200);
}

TEST_F(SimFaults, LatencyHeaderDelaysTheAnswer) {
  HttpClient c(port());
  const auto t0 = std::chrono::steady_clock::now();
  Response r = c.post("/v1/completions", R"({"prompt":"x","max_tokens":1})",
                      {{"X-Llmux-Fault", "latency-ms=200"}});
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.status, 200);
  EXPECT_GE(took, 200ms);
}

class SimFaultFlags : public SimSuite {
 protected:
  static void SetUpTestSuite() {
    start({"--zero-cost", "--fault-error-rate", "1", "--fault-error-status", "429"});
  }
};

TEST_F(SimFaultFlags, EveryGenerationIs429) {
  HttpClient c(port());
  for (int i = 0; i < 5; ++i) {
    expect_error(c.post("/v1/completions", R"({"prompt":"x"})"), 429, "completions");
    expect_error(c.post("/v1/chat/completions", kChatStream), 429, "chat");
    expect_error(c.post("/v1/responses", R"({"input":"x"})"), 429, "responses");
  }
  EXPECT_EQ(error_type(c.post("/v1/completions", R"({"prompt":"x"})").body), "RateLimitError");
  // Non-generation endpoints are not affected.
  EXPECT_EQ(c.get("/health").status, 200);
  EXPECT_EQ(c.get("/v1/models").status, 200);
}

}  // namespace
}  // namespace llmux::test
