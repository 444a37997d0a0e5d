// SPDX-License-Identifier: Apache-2.0
#include "sim/store.hpp"

namespace llmux::sim {

void ResponseStore::put(const std::string& id, StoredResponse stored) {
  auto [it, inserted] = store_.insert_or_assign(id, std::move(stored));
  if (inserted) order_.push_back(id);
  while (store_.size() > max_ && !order_.empty()) {
    store_.erase(order_.front());
    order_.pop_front();
  }
}

const StoredResponse* ResponseStore::find(std::string_view id) const {
  auto it = store_.find(std::string(id));
  return it == store_.end() ? nullptr : &it->second;
}

std::optional<std::vector<Message>> ResponseStore::conversation(std::string_view id) const {
  if (const StoredResponse* stored = find(id)) return stored->conversation;
  return std::nullopt;
}

void ResponseStore::add_running(const std::string& id, std::shared_ptr<Job> job) {
  running_[id] = std::move(job);
}

std::shared_ptr<Job> ResponseStore::running(std::string_view id) const {
  auto it = running_.find(std::string(id));
  return it == running_.end() ? nullptr : it->second;
}

void ResponseStore::erase_running(std::string_view id) {
  running_.erase(std::string(id));
}

}  // namespace llmux::sim
