// SPDX-License-Identifier: Apache-2.0
#include "sim/timings.hpp"

#include <boost/json.hpp>

namespace llmux::sim {

namespace json = boost::json;

json::object timing_json(const Timing& timing) {
  json::object object;
  object["id"] = timing.id;
  object["request_id"] = timing.request_id;
  object["endpoint"] = timing.endpoint;
  object["stream"] = timing.stream;
  object["clock"] = "CLOCK_MONOTONIC_ns";
  object["arrival_ns"] = timing.arrival_ns;
  object["scheduled_ns"] = timing.scheduled_ns;
  object["first_token_ns"] = timing.first_token_ns;
  object["end_ns"] = timing.end_ns;
  object["prompt_tokens"] = timing.prompt_tokens;
  object["cached_tokens"] = timing.cached_tokens;
  object["completion_tokens"] = timing.completion_tokens;
  object["finish_reason"] = timing.finish_reason;
  object["outcome"] = timing.outcome;
  object["kv_transfer"] = timing.kv_transfer;
  object["kv_transfer_tokens"] = timing.kv_transfer_tokens;
  object["kv_transfer_seconds"] = timing.kv_transfer_seconds;
  object["token_ns"] = json::value_from(timing.token_ns);
  object["token_sched_ns"] = json::value_from(timing.token_sched_ns);
  return object;
}

void TimingLog::remember(std::shared_ptr<Timing> timing) {
  timings_.push_back(timing);
  by_id_[timing->id] = timing;
  if (!timing->request_id.empty()) by_id_[timing->request_id] = timing;
  while (timings_.size() > max_) {
    auto old = timings_.front();
    timings_.pop_front();
    auto it = by_id_.find(old->id);
    if (it != by_id_.end() && it->second == old) by_id_.erase(it);
    it = by_id_.find(old->request_id);
    if (it != by_id_.end() && it->second == old) by_id_.erase(it);
  }
}

const Timing* TimingLog::find(std::string_view id) const {
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : it->second.get();
}

std::string TimingLog::list_json(std::size_t limit) const {
  json::array arr;
  std::size_t start = timings_.size() > limit ? timings_.size() - limit : 0;
  for (std::size_t i = start; i < timings_.size(); ++i) arr.push_back(timing_json(*timings_[i]));
  return json::serialize(json::object{{"object", "list"}, {"data", std::move(arr)}});
}

}  // namespace llmux::sim
