// SPDX-License-Identifier: Apache-2.0
#include "sim/admin.hpp"

#include <boost/asio.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/beast/http.hpp>
#include <boost/json.hpp>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "core/clock.hpp"
#include "core/use_tuple.hpp"
#include "http/peer_watch.hpp"

namespace llmux::sim {
namespace {

namespace net = boost::asio;
namespace http = boost::beast::http;
namespace json = boost::json;
using net::awaitable;
using namespace net::experimental::awaitable_operators;
using core::use_tuple;

/// The most a hold's watch reads at once: bytes of a pipelined next request, kept in
/// connection.buf.
constexpr std::size_t kHoldWatchRead = 4096;

net::steady_timer::time_point at_ns(std::int64_t ns) {
  return net::steady_timer::time_point(std::chrono::nanoseconds(ns));
}

std::int64_t ns_from_now(std::int64_t now, double seconds) {
  return now + static_cast<std::int64_t>(seconds * 1e9);
}

/// Equal strings, in a time that depends on their lengths only.
bool same_secret(std::string_view given, std::string_view secret) {
  unsigned char diff = given.size() == secret.size() ? 0 : 1;
  for (std::size_t i = 0; i < given.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ (i < secret.size() ? secret[i] : 0));
  return diff == 0;
}

bool iequals(std::string_view left, std::string_view right) {
  return left.size() == right.size() &&
         std::equal(left.begin(), left.end(), right.begin(), [](char left_char, char right_char) {
           return std::tolower(static_cast<unsigned char>(left_char)) ==
                  std::tolower(static_cast<unsigned char>(right_char));
         });
}

/// The process dies at once, as a crashed or OOM-killed vLLM does: no answer, no clean-up.
[[noreturn]] void crash(std::string_view why) {
  spdlog::critical("runtime fault {}: the simulator dies now (SIGKILL)", why);
  spdlog::default_logger()->flush();
  ::raise(SIGKILL);
  ::_exit(137);
}

awaitable<void> wait_cancelled(net::steady_timer& timer) {
  co_await timer.async_wait(use_tuple);
}

}  // namespace

bool is_loopback(const net::ip::address& address) {
  if (address.is_v4()) return address.to_v4().is_loopback();
  const auto ipv6 = address.to_v6();
  if (ipv6.is_v4_mapped()) return net::ip::make_address_v4(net::ip::v4_mapped, ipv6).is_loopback();
  return ipv6.is_loopback();
}

AdminVerdict admin_access(const net::ip::address& peer, std::string_view authorization,
                          std::string_view token) {
  if (!token.empty()) {
    constexpr std::string_view scheme = "Bearer ";
    if (authorization.size() < scheme.size() ||
        !iequals(authorization.substr(0, scheme.size()), scheme)) {
      return {401,
              "/admin/faults needs `Authorization: Bearer <token>`: the simulator runs with "
              "--admin-token"};
    }
    std::string_view given = authorization.substr(scheme.size());
    while (!given.empty() && given.front() == ' ') given.remove_prefix(1);
    while (!given.empty() && given.back() == ' ') given.remove_suffix(1);
    if (!same_secret(given, token)) return {403, "Wrong admin token for /admin/faults."};
    return {};
  }
  if (!is_loopback(peer)) {
    return {403,
            "/admin/faults answers loopback clients only (start the simulator with "
            "--admin-token to allow others)."};
  }
  return {};
}

FaultControl::FaultControl(const SimConfig& cfg, net::io_context& ioc, Listener& listener)
    : cfg_(cfg),
      listener_(listener),
      startup_not_ready_until_ns_(ns_from_now(mono_ns(), cfg.faults.not_ready_for_s)),
      crash_timer_(ioc),
      unhang_(ioc, net::steady_timer::time_point::max()) {}

bool FaultControl::not_ready() const {
  const std::int64_t now = mono_ns();
  return now < startup_not_ready_until_ns_ || now < not_ready_until_ns_;
}

void FaultControl::count_generation() {
  if (crash_left_ > 0 && --crash_left_ == 0) crash("crash_after_requests");
}

awaitable<bool> FaultControl::hold_while_hung(Conn& connection) {
  ::llmux::http::PeerWatch watch;
  watch.start(connection.sock(), connection.buf, kHoldWatchRead);
  while (hung() && !watch.gone()) co_await (wait_cancelled(unhang_) || watch.until_gone());
  co_await watch.stop(connection.sock());
  co_return !watch.gone();
}

RuntimeFaults FaultControl::current() const {
  RuntimeFaults faults = set_;
  const std::int64_t now = mono_ns();
  // Seconds left, rounded up to the millisecond.
  auto left = [now](std::int64_t until) {
    return std::ceil(static_cast<double>(std::max<std::int64_t>(until - now, 0)) / 1e6) / 1e3;
  };
  if (faults.not_ready_for) {
    if (not_ready_until_ns_ > now) {
      faults.not_ready_for = left(not_ready_until_ns_);
    } else {
      faults.not_ready_for.reset();
    }
  }
  if (faults.crash_after_requests) faults.crash_after_requests = crash_left_;
  if (faults.crash_at) faults.crash_at = left(crash_at_ns_);
  faults.refuse_new = listener_.refusing();
  return faults;
}

std::string FaultControl::install(const RuntimeFaults& faults) {
  if (faults.refuse_new) {
    listener_.refuse();
  } else if (auto ec = listener_.resume()) {
    return fmt::format("Cannot listen again on port {}: {}", listener_.port(), ec.message());
  }
  const bool unhang = set_.hang && !faults.hang;
  const bool freeze_changed = set_.freeze != faults.freeze;
  const bool slow_changed = set_.slow_factor != faults.slow_factor;
  set_ = faults;
  if (freeze_changed && on_freeze_) on_freeze_(faults.freeze);
  if (slow_changed && on_slow_) on_slow_(faults.slow_factor.value_or(1.0));
  const std::int64_t now = mono_ns();
  not_ready_until_ns_ = faults.not_ready_for ? ns_from_now(now, *faults.not_ready_for) : 0;
  crash_left_ = faults.crash_after_requests.value_or(0);
  crash_at_ns_ = faults.crash_at ? ns_from_now(now, *faults.crash_at) : 0;
  ++crash_generation_;
  crash_timer_.cancel();
  if (unhang) unhang_.cancel();  // every held request wakes and goes on
  spdlog::info("runtime faults: {}", json::serialize(runtime_faults_json(faults)));
  return {};
}

void FaultControl::arm_crash_timer() {
  if (crash_at_ns_ == 0) return;
  crash_timer_.expires_at(at_ns(crash_at_ns_));
  crash_timer_.async_wait([this, gen = crash_generation_](boost::system::error_code ec) {
    if (!ec && gen == crash_generation_) crash("crash_at");
  });
}

awaitable<void> FaultControl::handle(Conn& connection, Request& req) {
  boost::system::error_code ec;
  const auto peer = connection.sock().remote_endpoint(ec);
  const AdminVerdict verdict = admin_access(ec ? net::ip::address() : peer.address(),
                                            req[http::field::authorization], cfg_.admin_token);
  if (verdict.status != 0)
    co_return co_await write_error(connection, verdict.status, verdict.message, true, &req);
  connection.admin = true;  // refusing new connections keeps this one open, to undo it
  const auto method = req.method();
  if (method == http::verb::get)
    co_return co_await write_json(connection, 200, json::serialize(runtime_faults_json(current())),
                                  &req);
  if (method != http::verb::post)
    co_return co_await write_error(connection, 405, "Method Not Allowed", true, &req);
  auto parsed = parse_runtime_faults(req.body());
  if (auto* error = std::get_if<FaultsError>(&parsed)) {
    std::optional<std::string_view> param;
    if (!error->field.empty()) param = error->field;
    co_return co_await write_error(connection, 400, error->message, true, &req, {}, param);
  }
  if (std::string err = install(std::get<RuntimeFaults>(parsed)); !err.empty())
    co_return co_await write_error(connection, 500, err, true, &req);
  co_await write_json(connection, 200, json::serialize(runtime_faults_json(current())), &req);
  arm_crash_timer();  // after the answer: `"crash_at": 0` still answers the POST first
}

}  // namespace llmux::sim
