// SPDX-License-Identifier: Apache-2.0
#pragma once
// Ground truth of each request (`GET /debug/requests[/{id}]`): when it arrived, was scheduled,
// produced each token and ended, on CLOCK_MONOTONIC nanoseconds. Kept in memory, oldest evicted.
#include <boost/json/object.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace llmux::sim {

/// The timing record of one request.
struct Timing {
  std::string id, request_id;
  std::string endpoint;
  bool stream = false;
  std::int64_t arrival_ns = 0, scheduled_ns = 0, first_token_ns = 0, end_ns = 0;
  std::int64_t prompt_tokens = 0, cached_tokens = 0, completion_tokens = 0;
  std::string finish_reason, outcome = "running";
  // Prefill/decode disaggregation: the prompt tokens whose KV came over the link and the
  // transfer's own time (model seconds); `kv_transfer` what became of the request's handle
  // ("held", "read", "expired" on a producer; "loaded", "load_failed" on a consumer).
  std::int64_t kv_transfer_tokens = 0;
  double kv_transfer_seconds = 0;
  std::string kv_transfer;
  std::vector<std::int64_t> token_ns;        // when each token's frame went to the socket
  std::vector<std::int64_t> token_sched_ns;  // the engine deadline that produced it
};

/// A record as /debug/requests serves it.
boost::json::object timing_json(const Timing& timing);

/// The last `max_records` records, by arrival, findable by response id or X-Request-Id.
class TimingLog {
 public:
  explicit TimingLog(std::size_t max_records) : max_(max_records) {}

  /// Keeps a record (still filled in by its request); evicts the oldest past the cap.
  void remember(std::shared_ptr<Timing> timing);
  /// The record of a response id or an X-Request-Id, or null.
  const Timing* find(std::string_view id) const;
  /// `{"object":"list","data":[...]}` with the newest `limit` records, oldest first.
  std::string list_json(std::size_t limit) const;

 private:
  std::size_t max_;
  std::deque<std::shared_ptr<Timing>> timings_;
  std::unordered_map<std::string, std::shared_ptr<Timing>> by_id_;
};

}  // namespace llmux::sim
