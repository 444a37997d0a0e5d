// SPDX-License-Identifier: Apache-2.0
#pragma once
// Request dispatch: one handler per endpoint. Generation requests are validated (sim/api), get
// their faults (sim/faults: flags, the runtime set of sim/admin, the header), become a Job
// submitted to the engine driver, and are answered by sim/stream; the Responses API's
// retrieve/cancel use the store; /debug/requests the timing log; /admin/faults sim/admin.
// Thread safety: the server's one thread.
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>

#include <optional>
#include <random>
#include <string>
#include <string_view>

#include "sim/admin.hpp"
#include "sim/api.hpp"
#include "sim/config.hpp"
#include "sim/driver.hpp"
#include "sim/http_io.hpp"
#include "sim/kv_producer.hpp"
#include "sim/metrics.hpp"
#include "sim/script.hpp"
#include "sim/store.hpp"
#include "sim/timings.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {

class Dispatcher {
 public:
  /// Everything given must outlive the dispatcher.
  Dispatcher(const SimConfig& cfg, boost::asio::io_context& ioc, EngineDriver& driver,
             SimMetrics& metrics, ResponseStore& store, TimingLog& timings, FaultControl& control,
             KvProducer& kv_producer);

  /// Answers one request read in full on `connection`.
  boost::asio::awaitable<void> dispatch(Conn& connection, Request& req);

 private:
  /// A generation request; `messages_api`: POST /v1/messages (a chat request in Anthropic's
  /// dialect, sim/messages_request).
  boost::asio::awaitable<void> handle_generate(Conn& connection, Request& req, Endpoint endpoint,
                                               bool messages_api = false);
  /// POST /v1/messages/count_tokens: the prompt's tokens, nothing generated.
  boost::asio::awaitable<void> count_tokens(Conn& connection, Request& req);
  boost::asio::awaitable<void> get_response(Conn& connection, Request& req, std::string_view id);
  boost::asio::awaitable<void> cancel_response(Conn& connection, Request& req, std::string_view id);
  std::string models_json() const;
  /// The scripted or statistical turn for a request, or null (generated words).
  std::shared_ptr<const TurnPlan> plan_turn(const GenRequest& gen_request, std::uint64_t seed);

  const SimConfig& cfg_;
  boost::asio::io_context& ioc_;
  EngineDriver& driver_;
  SimMetrics& metrics_;
  ResponseStore& store_;
  TimingLog& timings_;
  FaultControl& control_;
  KvProducer& kv_producer_;
  std::mt19937_64 rng_;
  ApiContext api_;
  std::optional<ScriptPlayer> script_;  // --script
};

}  // namespace llmux::sim
