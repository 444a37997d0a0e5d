// SPDX-License-Identifier: Apache-2.0
#include "support/gateway_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "support/http_client.hpp"

#ifndef LLMUX_SOURCE_DIR
#define LLMUX_SOURCE_DIR "."
#endif

namespace llmux::test {

std::string source_dir() {
  if (const char* env = std::getenv("LLMUX_SOURCE_DIR"); env && *env) return env;
  return LLMUX_SOURCE_DIR;
}

namespace {
std::vector<std::string> gateway_argv(const std::vector<std::string>& args,
                                      const std::string& access_log) {
  std::vector<std::string> argv{llmux_binary(), "gateway"};
  argv.insert(argv.end(), args.begin(), args.end());
  bool has_log = false;
  for (const auto& a : args) has_log = has_log || a == "--access-log";
  if (!has_log) {
    argv.push_back("--access-log");
    argv.push_back(access_log);
  }
  return argv;
}
}  // namespace

GatewayServer::GatewayServer(const std::vector<std::string>& args,
                             std::chrono::milliseconds ready_timeout)
    : GatewayServer(std::make_shared<TempDir>(), args, ready_timeout) {}

GatewayServer::GatewayServer(std::shared_ptr<TempDir> dir, const std::vector<std::string>& args,
                             std::chrono::milliseconds ready_timeout)
    : ChildProcess(gateway_argv(args, dir->path() + "/access.log"), ready_timeout, false),
      dir_(std::move(dir)),
      access_log_(dir_->path() + "/access.log") {}

namespace {

/// Health machinery only where a test asks for it (see the header).
std::string with_health_defaults(std::string text) {
  if (text.find("health_checks:") == std::string::npos)
    text = "health_checks: {enabled: false}\n" + text;
  if (text.find("outlier_detection:") == std::string::npos)
    text = "outlier_detection: {enabled: false}\n" + text;
  return text;
}

}  // namespace

std::unique_ptr<GatewayServer> GatewayServer::with_config(const std::string& yaml,
                                                          const std::vector<std::string>& extra) {
  auto dir = std::make_shared<TempDir>();
  const std::string path = dir->write("gateway.yaml", with_health_defaults(yaml));
  std::vector<std::string> args{"--config", path};
  args.insert(args.end(), extra.begin(), extra.end());
  std::unique_ptr<GatewayServer> gw(
      new GatewayServer(std::move(dir), args, std::chrono::seconds(10)));
  gw->config_path_ = path;
  return gw;
}

void GatewayServer::rewrite_config(const std::string& yaml) const {
  const std::string tmp = dir_->write("gateway.yaml.next", with_health_defaults(yaml));
  if (std::rename(tmp.c_str(), config_path_.c_str()) != 0)
    ADD_FAILURE() << "cannot replace " << config_path_;
}

std::string GatewayServer::dir_path(const std::string& name) const {
  return dir_->path() + "/" + name;
}

std::vector<boost::json::object> GatewayServer::access_log(std::vector<std::string>* bad) const {
  std::vector<boost::json::object> out;
  std::istringstream in(read_text_file(access_log_));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    boost::system::error_code ec;
    auto v = boost::json::parse(line, ec);
    if (ec || !v.is_object()) {
      if (bad) {
        bad->push_back(line);
      } else {
        ADD_FAILURE() << "access log line is not a JSON object: " << line;
      }
      continue;
    }
    out.push_back(v.as_object());
  }
  return out;
}

boost::json::object GatewayServer::wait_access_record(const std::string& request_id,
                                                      std::chrono::milliseconds timeout) const {
  boost::json::object found;
  std::vector<std::string> bad;
  poll_until(
      [&] {
        bad.clear();
        for (auto& o : access_log(&bad)) {
          const auto* id = o.if_contains("request_id");
          if (id && id->is_string() && id->as_string() == request_id) {
            found = o;
            return true;
          }
        }
        return false;
      },
      timeout);
  for (const auto& line : bad) ADD_FAILURE() << "access log line is not a JSON object: " << line;
  return found;
}

void GatewayServer::expect_clean_exit(std::chrono::milliseconds timeout) {
  checked_ = true;
  const auto status = terminate(timeout);
  const std::string err = stderr_text();
  EXPECT_TRUE(status.has_value()) << "the gateway did not exit within the timeout; stderr:\n"
                                  << err;
  if (status) {
    EXPECT_EQ(*status, 0) << "gateway stderr:\n" << err;
  }
  EXPECT_FALSE(has_sanitizer_report(err)) << "sanitizer report from the gateway:\n" << err;
}

GatewayServer::~GatewayServer() {
  if (checked_) return;
  terminate(std::chrono::seconds(10));
  const std::string err = stderr_text();
  if (has_sanitizer_report(err)) ADD_FAILURE() << "sanitizer report from the gateway:\n" << err;
}

std::string seed_config(int port1, int port2, int threads) {
  return example_config("seed.yaml", port1, port2, threads);
}

std::string example_config(const std::string& name, int port1, int port2, int threads) {
  std::string text = read_text_file(source_dir() + "/examples/" + name);
  auto replace = [&](const std::string& from, const std::string& to) {
    const auto pos = text.find(from);
    if (pos == std::string::npos)
      throw std::runtime_error("examples/" + name + " no longer contains '" + from + "'");
    text.replace(pos, from.size(), to);
  };
  // Every backend URL of the example (the seed's LAN machines), in order, becomes a loopback
  // simulator: nothing here ever connects to the example's own addresses.
  const int ports[] = {port1, port2};
  std::size_t from = 0;
  for (int port : ports) {
    const auto at = text.find("url: http://", from);
    if (at == std::string::npos)
      throw std::runtime_error("examples/" + name + " no longer has two backend urls");
    const auto start = at + 5;
    const auto end = text.find_first_of(" \n#", start);
    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    text.replace(start, end - start, url);
    from = start + url.size();
  }
  replace("listen: \":8080\"", "listen: \"127.0.0.1:0\"");
  replace("threads: 0", "threads: " + std::to_string(threads));
  return text;
}

std::string backend_line(const std::string& name, int port, const std::string& extra) {
  return "  - {name: " + name + ", url: \"http://127.0.0.1:" + std::to_string(port) + "\"" + extra +
         "}\n";
}

std::string one_route_config(int threads, const std::string& backend_lines,
                             const std::string& names, const std::string& extra) {
  return "listen: \"127.0.0.1:0\"\nthreads: " + std::to_string(threads) + "\nbackends:\n" +
         backend_lines + "routes:\n  - {name: all, backends: [" + names + "], policy: first}\n" +
         extra;
}

RunResult run_gateway(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv{llmux_binary(), "gateway"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_to_completion(argv, timeout);
}

void expect_serves(int gw_port) {
  HttpClient c(gw_port);
  Response r = c.post("/v1/completions", R"({"prompt":"still there?","max_tokens":2})");
  EXPECT_EQ(r.status, 200) << r.body;
}

void dump_on_failure(const GatewayServer& gw) {
  if (::testing::Test::HasFailure()) std::cerr << "gateway stderr:\n" << gw.stderr_text() << "\n";
}

std::string echoed_header(const boost::json::object& echo, const std::string& name) {
  const auto* h = echo.at("headers").as_object().if_contains(name);
  return h ? str(*h) : std::string();
}

}  // namespace llmux::test
