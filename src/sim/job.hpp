// SPDX-License-Identifier: Apache-2.0
#pragma once
// One generation request in flight, shared by the connection that serves it and the engine
// driver that feeds it tokens. Internal to the server (one thread: no locks).
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/api.hpp"
#include "sim/faults.hpp"
#include "sim/textgen.hpp"
#include "sim/timings.hpp"
#include "sim/turn.hpp"

namespace llmux::sim {

struct Job {
  explicit Job(boost::asio::any_io_executor executor)
      : wake(executor, boost::asio::steady_timer::time_point::max()) {}
  std::uint64_t seq = 0;
  GenRequest req;
  ResponseMeta meta;
  std::vector<std::uint16_t> words;
  Usage usage;
  RequestFaults faults;
  std::string out;  // SSE bytes not yet written
  int emitted = 0, stamped = 0;
  std::int64_t seq_number = 0;  // Responses API event counter
  bool finished = false, aborted = false, fault_close = false, stalled = false;
  bool in_engine = false;
  std::int64_t last_emit_ns = 0;
  boost::asio::steady_timer wake;  // cancelled by notify(): the job's writer has work
  std::shared_ptr<Timing> timing;
  /// A scripted or statistical turn (null: the generated words above, as before).
  std::shared_ptr<const TurnPlan> turn_plan;
  int turn_output_index = -1;  // Responses: output_index of the item being streamed

  void notify() { wake.cancel(); }
  std::string text() const {
    std::string result;
    result.reserve(words.size() * 4);
    for (auto word : words) result += vocab_piece(word);
    return result;
  }
};

}  // namespace llmux::sim
