// SPDX-License-Identifier: Apache-2.0
#pragma once
// Faults changed while the simulator runs: the `/admin/faults` endpoint (GET: the set in force;
// POST: a new set, replacing the last), who may call it (loopback peers, or anyone with the
// `--admin-token`), and the state a set drives — the faults added to each generation request,
// the hang that holds requests, /health's not-ready time (also `--not-ready-for` at start), the
// crash after N requests or at a time, and listening refused or resumed (sim/listener.hpp).
// The body's fields: sim/runtime_faults.hpp and docs/sim.md.
//
// Thread safety: none needed — the simulator is single-threaded, and every member runs on the
// io_context's one thread (sessions, timers and the admin handler alike). Ownership: the server
// owns the FaultControl; the config, io_context and Listener it refers to outlive it.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>

#include <cstdint>
#include <random>
#include <string>
#include <string_view>

#include "sim/config.hpp"
#include "sim/faults.hpp"
#include "sim/http_io.hpp"
#include "sim/listener.hpp"
#include "sim/runtime_faults.hpp"

namespace llmux::sim {

/// The path of the admin endpoint.
inline constexpr std::string_view kAdminFaultsPath = "/admin/faults";

/// True for 127.0.0.0/8, ::1 and IPv4-mapped 127.0.0.0/8.
bool is_loopback(const boost::asio::ip::address& address);

/// Whether an admin request may go on: status 0 when it may, else 401 (no `Bearer` credentials
/// while a token is required) or 403 (a wrong token; without a token, a peer that is not
/// loopback), with the message to answer. Pure.
struct AdminVerdict {
  int status = 0;
  std::string message;
};
AdminVerdict admin_access(const boost::asio::ip::address& peer, std::string_view authorization,
                          std::string_view token);

class FaultControl {
 public:
  /// Starts the `--not-ready-for` time now.
  FaultControl(const SimConfig& cfg, boost::asio::io_context& ioc, Listener& listener);

  /// Answers a request for kAdminFaultsPath (any method): always, even while hung or not ready.
  boost::asio::awaitable<void> handle(Conn& connection, Request& req);

  /// Adds the runtime set to the faults the flags drew for one generation request.
  void apply(RequestFaults& faults, std::mt19937_64& rng) const {
    apply_runtime_faults(faults, set_, rng);
  }
  /// Counts one generation request: the process dies here (SIGKILL) on the
  /// crash_after_requests-th since the set was posted.
  void count_generation();
  /// /health answers 503 (start-up or runtime not_ready_for not over yet).
  bool not_ready() const;
  /// Requests other than admin ones are held unanswered.
  bool hung() const { return set_.hang; }
  /// Called with true when `freeze` is posted and false when it is cleared (the engine driver
  /// stops and resumes its clock).
  void on_freeze(std::function<void(bool)> callback) { on_freeze_ = std::move(callback); }
  /// Called with the engine's slowdown (1: none) when `slow_factor` is posted or cleared.
  void on_slow(std::function<void(double)> callback) { on_slow_ = std::move(callback); }
  /// Holds the request just read on `connection` while hung, watching the client. True when the
  /// hang ended (serve the request); false when the client left first (close the connection).
  boost::asio::awaitable<bool> hold_while_hung(Conn& connection);

 private:
  /// Puts `faults` in force; an error message (nothing changed) when listening again failed.
  std::string install(const RuntimeFaults& faults);
  /// The set in force, its counters and times as what is left of them now.
  RuntimeFaults current() const;
  void arm_crash_timer();

  const SimConfig& cfg_;
  Listener& listener_;
  RuntimeFaults set_;                        // as posted
  std::int64_t startup_not_ready_until_ns_;  // --not-ready-for
  std::int64_t not_ready_until_ns_ = 0;      // not_ready_for (0: none)
  std::int64_t crash_left_ = 0;              // generation requests left before the crash (0: none)
  std::int64_t crash_at_ns_ = 0;             // crash_at (0: none)
  boost::asio::steady_timer crash_timer_;
  std::uint64_t crash_generation_ = 0;  // a timer armed for an older set does nothing
  boost::asio::steady_timer unhang_;    // never expires: cancel() wakes held requests
  std::function<void(bool)> on_freeze_;
  std::function<void(double)> on_slow_;
};

}  // namespace llmux::sim
