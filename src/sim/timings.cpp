// SPDX-License-Identifier: Apache-2.0
#include "sim/timings.hpp"

#include <boost/json.hpp>

namespace llmux::sim {

namespace json = boost::json;

json::object timing_json(const Timing& t) {
  json::object o;
  o["id"] = t.id;
  o["request_id"] = t.request_id;
  o["endpoint"] = t.endpoint;
  o["stream"] = t.stream;
  o["clock"] = "CLOCK_MONOTONIC_ns";
  o["arrival_ns"] = t.arrival_ns;
  o["scheduled_ns"] = t.scheduled_ns;
  o["first_token_ns"] = t.first_token_ns;
  o["end_ns"] = t.end_ns;
  o["prompt_tokens"] = t.prompt_tokens;
  o["cached_tokens"] = t.cached_tokens;
  o["completion_tokens"] = t.completion_tokens;
  o["finish_reason"] = t.finish_reason;
  o["outcome"] = t.outcome;
  o["token_ns"] = json::value_from(t.token_ns);
  o["token_sched_ns"] = json::value_from(t.token_sched_ns);
  return o;
}

void TimingLog::remember(std::shared_ptr<Timing> t) {
  timings_.push_back(t);
  by_id_[t->id] = t;
  if (!t->request_id.empty()) by_id_[t->request_id] = t;
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
