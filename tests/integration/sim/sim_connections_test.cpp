// SPDX-License-Identifier: Apache-2.0
// The simulator's connections as vLLM's uvicorn server keeps them (issue 14, details): an idle
// keep-alive connection is closed --keep-alive-timeout after its last response (uvicorn's
// --timeout-keep-alive, 5 s by default), a request sent before that is served on it, and no
// request-size limit applies unless --max-body-bytes sets one.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>

#include "support/http_client.hpp"
#include "support/sim_suite.hpp"

namespace llmux::test {
namespace {

using namespace std::chrono_literals;

std::string completion_request(const std::string& body) {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

const std::string kSmall = R"({"prompt":"hi","max_tokens":2})";

class SimKeepAlive : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--keep-alive-timeout", "0.4"}); }
};

TEST_F(SimKeepAlive, IdleConnectionClosedAfterTheTimeout) {
  RawConnection raw(port());
  ASSERT_TRUE(raw.send(completion_request(kSmall)));
  const std::string first = raw.read_response(5s);
  ASSERT_NE(first.find("200 OK"), std::string::npos) << first;
  bool closed = false;
  const auto t0 = std::chrono::steady_clock::now();
  const std::string rest = raw.read_until_close(5s, &closed);
  const auto idle = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(closed) << "the idle connection stayed open";
  EXPECT_TRUE(rest.empty()) << "closed with bytes: " << rest;
  EXPECT_GE(idle, 300ms);  // not at once: after the timeout
}

TEST_F(SimKeepAlive, RequestWithinTheTimeoutIsServedOnTheSameConnection) {
  RawConnection raw(port());
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(raw.send(completion_request(kSmall))) << i;
    const std::string r = raw.read_response(5s);
    ASSERT_NE(r.find("200 OK"), std::string::npos) << i << ": " << r;
    std::this_thread::sleep_for(100ms);  // idle, but under the timeout
  }
}

// The first request of a new connection is not held to the keep-alive timeout.
TEST_F(SimKeepAlive, NewConnectionWaitsLongerForItsFirstRequest) {
  RawConnection raw(port());
  std::this_thread::sleep_for(700ms);  // the duration under test: longer than the 0.4 s timeout
  ASSERT_TRUE(raw.send(completion_request(kSmall)));
  const std::string r = raw.read_response(5s);
  EXPECT_NE(r.find("200 OK"), std::string::npos) << r;
}

class SimNoBodyLimit : public SimSuite {
 protected:
  static void SetUpTestSuite() { start({"--zero-cost", "--max-model-len", "4096"}); }
};

// A 3 MiB body (over Beast's 1 MiB default and larger than socket buffers) is read and parsed:
// the answer is vLLM's context-length 400, not a 413.
TEST_F(SimNoBodyLimit, LargeBodyIsReadAndJudgedByItsTokens) {
  std::string prompt;
  while (prompt.size() < (3u << 20)) prompt += "word ";
  HttpClient c(port());
  const Response r = c.post("/v1/completions", R"({"prompt":")" + prompt + R"(","max_tokens":2})");
  EXPECT_EQ(r.status, 400) << r.body.substr(0, 300);
  EXPECT_NE(r.body.find("maximum context length"), std::string::npos) << r.body.substr(0, 300);
}

}  // namespace
}  // namespace llmux::test
