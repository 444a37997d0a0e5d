// SPDX-License-Identifier: Apache-2.0
// The access log's line (gateway/access_log.hpp): valid JSON whose every field reads back as
// the record had it — strings escaped (quotes, backslashes, control bytes), times with three
// decimals (rounded, negative for "none"), optional fields only when set.
#include "gateway/access_log.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <boost/json/parse.hpp>

namespace json = boost::json;
using llmux::gateway::AccessLog;
using llmux::gateway::AccessRecord;

namespace {

/// The lines `write` produced for `records`, each parsed.
std::vector<std::string> lines_of(const std::vector<AccessRecord>& records,
                                  std::string_view priority = {}) {
  char path[] = "/tmp/llmux-access-log-XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  {
    AccessLog log;
    std::string error;
    EXPECT_TRUE(log.open(path, error)) << error;
    for (const auto& r : records) log.write(r, priority);
    log.flush();
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::remove(path);
  return lines;
}

TEST(AccessLogLine, EveryFieldReadsBackAsTheRecordHadIt) {
  AccessRecord r;
  r.request_id = "0123456789abcdef0123456789abcdef";
  r.client = "127.0.0.1:40000";
  r.method = "POST";
  r.path = "/v1/chat/completions";
  r.route = "chat \"main\"";                                   // a quote to escape
  r.backend = "spark\\1";                                      // a backslash
  r.model = std::string_view("m\n\t\x01\x1f\x7f\xc3\xa9", 8);  // controls, DEL, UTF-8 é
  r.tenant = "team-a";
  r.tenant_is_key = true;
  r.affinity = "known";
  r.error = "upstream said \"no\"\r\n";
  r.status = 502;
  r.attempts = 2;
  r.queue_depth = 3;
  r.queue_ms = 12.3456;
  r.bytes_in = 123456789012ULL;
  r.bytes_out = 0;
  r.ttfb_ms = 0.0004;  // rounds to 0.000
  r.total_ms = 1234.5678;
  r.stream = true;
  r.prompt_tokens = 17;
  r.completion_tokens = 0;
  const auto before = std::chrono::system_clock::now();
  const auto lines = lines_of({r}, "batch");
  const auto after = std::chrono::system_clock::now();
  ASSERT_EQ(lines.size(), 1u);
  const json::object o = json::parse(lines[0]).as_object();
  EXPECT_EQ(o.at("request_id").as_string(), r.request_id);
  EXPECT_EQ(o.at("client").as_string(), r.client);
  EXPECT_EQ(o.at("method").as_string(), "POST");
  EXPECT_EQ(o.at("path").as_string(), r.path);
  EXPECT_EQ(o.at("route").as_string(), r.route);
  EXPECT_EQ(o.at("backend").as_string(), r.backend);
  EXPECT_EQ(o.at("model").as_string(), r.model);
  EXPECT_EQ(o.at("key").as_string(), "team-a");
  EXPECT_EQ(o.at("tenant").as_string(), "team-a");
  EXPECT_EQ(o.at("priority").as_string(), "batch");
  EXPECT_EQ(o.at("affinity").as_string(), "known");
  EXPECT_EQ(o.at("error").as_string(), r.error);
  EXPECT_EQ(o.at("status").as_int64(), 502);
  EXPECT_EQ(o.at("attempts").as_int64(), 2);
  EXPECT_EQ(o.at("queue_depth").as_int64(), 3);
  EXPECT_EQ(o.at("bytes_in").as_int64(), 123456789012LL);
  EXPECT_EQ(o.at("bytes_out").as_int64(), 0);
  EXPECT_EQ(o.at("stream").as_bool(), true);
  EXPECT_EQ(o.at("prompt_tokens").as_int64(), 17);
  EXPECT_EQ(o.at("completion_tokens").as_int64(), 0);
  // Three decimals exactly as written, rounded.
  EXPECT_NE(lines[0].find("\"queue_ms\":12.346,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"ttfb_ms\":0.000,"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("\"total_ms\":1234.568,"), std::string::npos) << lines[0];
  // Control bytes as \u00XX (JSON allows nothing else for them).
  EXPECT_NE(lines[0].find("\\u0001\\u001f"), std::string::npos) << lines[0];
  // The wall-clock time, in seconds with milliseconds.
  const double ts = o.at("ts").as_double();
  const auto secs = [](auto t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
  };
  EXPECT_GE(ts, secs(before) - 0.001);
  EXPECT_LE(ts, secs(after) + 0.001);
  const std::string ts_text = lines[0].substr(6, lines[0].find(',') - 6);
  EXPECT_EQ(ts_text.size() - ts_text.find('.'), 4u) << ts_text;
}

TEST(AccessLogLine, UnsetFieldsAreLeftOutAndNoTimeIsNegative) {
  AccessRecord r;  // as a request refused before any backend: no ttfb (-1), nothing optional
  r.method = "GET";
  r.path = "/v1/models";
  r.status = 401;
  r.total_ms = 0.25;
  const auto lines = lines_of({r, r});
  ASSERT_EQ(lines.size(), 2u);
  const json::object o = json::parse(lines[1]).as_object();
  for (const char* absent : {"queue_depth", "queue_ms", "key", "tenant", "priority", "affinity",
                             "prompt_tokens", "completion_tokens", "error"})
    EXPECT_FALSE(o.contains(absent)) << absent << " in " << lines[1];
  EXPECT_EQ(o.at("backend").as_string(), "");
  EXPECT_EQ(o.at("stream").as_bool(), false);
  EXPECT_NE(lines[1].find("\"ttfb_ms\":-1.000,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("\"total_ms\":0.250"), std::string::npos) << lines[1];
}

}  // namespace
