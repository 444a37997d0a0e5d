// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Responses API's in-memory store (vLLM with VLLM_ENABLE_RESPONSES_API_STORE=1): finished
// responses with the conversation a `previous_response_id` continues, capped with the oldest
// evicted first, and the background responses still running.
#include <boost/json/object.hpp>

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "sim/api.hpp"

namespace llmux::sim {

struct Job;

struct StoredResponse {
  boost::json::object response;
  std::vector<Message> conversation;  // the input and the output: what the next turn builds on
  bool background = false;
};

class ResponseStore {
 public:
  explicit ResponseStore(std::size_t max_entries) : max_(max_entries) {}

  /// Stores or replaces a response; past the cap the oldest stored id goes first.
  void put(const std::string& id, StoredResponse stored);
  const StoredResponse* find(std::string_view id) const;
  bool contains(std::string_view id) const { return find(id) != nullptr; }
  /// The stored conversation of a response id (for `previous_response_id`).
  std::optional<std::vector<Message>> conversation(std::string_view id) const;

  /// Background responses (`background: true`) while they run.
  void add_running(const std::string& id, std::shared_ptr<Job> job);
  std::shared_ptr<Job> running(std::string_view id) const;
  void erase_running(std::string_view id);

 private:
  std::size_t max_;
  std::unordered_map<std::string, StoredResponse> store_;
  std::deque<std::string> order_;
  std::unordered_map<std::string, std::shared_ptr<Job>> running_;
};

}  // namespace llmux::sim
