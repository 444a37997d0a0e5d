// SPDX-License-Identifier: Apache-2.0
#pragma once
// The `llmux gateway` process: what run_gateway() (gateway/gateway.hpp) runs. Its work is in
// three files, one concern each:
//   lifecycle.cpp   start-up (the shared state, Redis, the workers), the worker threads and the
//                   ticker of each, the ready line, and the stop;
//   listeners.cpp   the listening sockets (SO_REUSEPORT, one acceptor per worker and listener)
//                   and the accept loops that start sessions (gateway/session.hpp);
//   control.cpp     the control thread: signals, reloads, the admin API's changes, the drain.
//
// Threads: the main thread runs worker 0; workers 1..N-1 a thread each; the control thread runs
// control_ (signals, reloads, admin changes, the drain: all of which may block); the health
// checker a thread of its own (gateway/health_checker.hpp). fleet_ and runtime_changes_ belong to
// the control thread once the workers run; the workers see a new fleet through
// Worker::set_fleet, posted to each.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/signal_set.hpp>

#include "config/config.hpp"
#include "gateway/fleet.hpp"
#include "gateway/gateway.hpp"
#include "gateway/health_checker.hpp"
#include "gateway/worker.hpp"

namespace llmux::state {
class ReplicaPresence;
}

namespace llmux::gateway {

struct AdminChange;  // gateway/admin.hpp

class GatewayProcess {
 public:
  GatewayProcess(config::GatewayConfig config, ConfigLoader reload)
      : start_config_(std::move(config)), reload_(std::move(reload)) {}
  GatewayProcess(const GatewayProcess&) = delete;
  GatewayProcess& operator=(const GatewayProcess&) = delete;

  /// Serves until a drain ends or a second signal stops it; the process's exit code.
  int run();

 private:
  // ---- lifecycle.cpp ----
  /// The response-affinity table: in memory, or shared by the replicas through Redis.
  void make_response_store(const config::GatewayConfig& config);
  /// Quotas and usage (auth/): in memory, or shared by the replicas through Redis.
  void make_quotas_and_usage(const config::GatewayConfig& config);
  void make_workers(int count);
  /// Starts the accept loops and the tickers, then the threads; returns when they stopped.
  void serve(const std::vector<std::uint16_t>& ports);
  static boost::asio::awaitable<void> replica_beat(state::ReplicaPresence& presence);
  static boost::asio::awaitable<void> deadline_ticker(Worker& worker, AccessLog* log);

  // ---- listeners.cpp ----
  /// Binds every listener of `config` on every worker, and metrics.listen on worker 0: 0, with
  /// `ports` the bound port of each listener, or the exit code.
  int open_listeners(const config::GatewayConfig& config, std::vector<std::uint16_t>& ports);
  void start_accepting();
  boost::asio::awaitable<void> accept_loop(Worker& worker, tcp::acceptor& acceptor,
                                           bool metrics_only, int listener);
  static boost::asio::awaitable<void> refuse(tcp::socket socket, int limit);

  // ---- control.cpp ----
  void start_control(boost::asio::signal_set& signals);
  static void add_signals(boost::asio::signal_set& signals);
  /// The signals add_signals() takes, blocked in the calling thread and so in every thread it
  /// starts later (workers, health checks, Redis), and unblocked by the control thread alone:
  /// the kernel hands each to the thread that waits for nothing else, never to a worker in the
  /// middle of a request. (With any thread taking them, a TSan build in CI once did not begin
  /// its drain within 10 s of SIGTERM: ThreadSanitizer runs a handler only at the receiving
  /// thread's next intercepted call.) A signal sent during start-up waits for the control
  /// thread instead of ending the process half started.
  static void hold_signals_for_control();
  static void take_signals_on_this_thread();
  boost::asio::awaitable<void> signal_loop(boost::asio::signal_set& signals);
  void reload();
  /// Puts a new fleet in use: every worker switches to it between requests.
  void install(std::shared_ptr<const Fleet> next);
  std::string change_fleet(const AdminChange& change, int& status);
  void begin_drain(int signal_number);

  config::GatewayConfig start_config_;  // moved into the first fleet by run()
  ConfigLoader reload_;
  GatewayState state_;
  std::shared_ptr<BackendSlots> slots_ = std::make_shared<BackendSlots>();
  std::shared_ptr<const Fleet> fleet_;  // the configuration in use (control thread after start)
  std::vector<std::unique_ptr<Worker>> workers_;
  std::unique_ptr<tcp::acceptor> metrics_acceptor_;  // metrics.listen (on worker 0)
  std::uint16_t metrics_port_ = 0;
  std::vector<std::string> runtime_changes_;  // admin API changes since the last reload
  HealthChecker checker_;
  boost::asio::io_context control_{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> control_work_{
      boost::asio::make_work_guard(control_)};
};

}  // namespace llmux::gateway
