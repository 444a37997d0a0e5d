// SPDX-License-Identifier: Apache-2.0
#include "gateway/metrics.hpp"

#include <algorithm>
#include <cmath>

namespace llmux::gateway::metrics {

NameTable::NameTable(std::string zero) {
  names_[0].store(new std::string(std::move(zero)));
}

NameTable::~NameTable() {
  for (auto& entry : names_) delete entry.load(std::memory_order_relaxed);
}

int NameTable::find(std::string_view name) const {
  const int count = size();
  for (int i = 1; i < count; ++i)
    if (*names_[static_cast<std::size_t>(i)].load(std::memory_order_acquire) == name) return i;
  return 0;
}

int NameTable::id(std::string_view name) {
  if (name.empty()) return 0;
  if (const int found = find(name)) return found;
  std::lock_guard lock(mu_);
  if (const int found = find(name)) return found;
  const int next = n_.load(std::memory_order_relaxed);
  if (next >= kMaxNames) return 0;
  names_[static_cast<std::size_t>(next)].store(new std::string(name), std::memory_order_release);
  n_.store(next + 1, std::memory_order_release);
  return next;
}

std::string_view NameTable::name(int id) const {
  if (id < 0 || id >= size()) id = 0;
  return *names_[static_cast<std::size_t>(id)].load(std::memory_order_acquire);
}

Names& names() {
  static Names tables;
  return tables;
}

namespace {

std::vector<std::int64_t> seconds(std::initializer_list<double> values) {
  std::vector<std::int64_t> out;
  for (double value : values) out.push_back(static_cast<std::int64_t>(std::llround(value * 1e9)));
  return out;
}

}  // namespace

const Bounds& bounds(HistKind kind) {
  // As vLLM's own histograms where they overlap, so the two read side by side.
  static const Bounds ttft{"ttft",
                           seconds({0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                    1,     2.5,  5,    7.5,  10,   20,   40,  80,   160, 640})};
  static const Bounds itl{"itl",
                          seconds({0.001, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075,
                                   0.1,   0.15,  0.2,  0.3,   0.4,  0.5,   0.75, 1,    2.5,  5})};
  static const Bounds e2e{"e2e", seconds({0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 20, 30, 40, 50, 60,
                                          120, 240, 480, 960, 1920})};
  static const Bounds overhead{
      "overhead", seconds({0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                           0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1})};
  static const Bounds queue_wait{"queue_wait", seconds({0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                        0.5, 1, 2.5, 5, 10, 20, 30, 60, 120})};
  switch (kind) {
    case HistKind::queue_wait:
      return queue_wait;
    case HistKind::ttft:
      return ttft;
    case HistKind::itl:
      return itl;
    case HistKind::e2e:
      return e2e;
    case HistKind::request_overhead:
    case HistKind::relay_overhead:
      return overhead;
  }
  return e2e;
}

void Histogram::add_to(std::array<std::uint64_t, kMaxBuckets + 1>& into, std::uint64_t& count,
                       std::uint64_t& sum_ns) const {
  for (std::size_t i = 0; i < buckets_.size(); ++i)
    into[i] += buckets_[i].load(std::memory_order_relaxed);
  count += count_.load(std::memory_order_relaxed);
  sum_ns += sum_ns_.load(std::memory_order_relaxed);
}

void CounterTable::add(std::uint64_t key, std::uint64_t amount) {
  const std::uint64_t stored = key + 1;
  std::size_t slot_index = static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> 52) % kSlots;
  for (std::size_t probe = 0; probe < kSlots; ++probe, slot_index = (slot_index + 1) % kSlots) {
    Slot& slot = slots_[slot_index];
    const std::uint64_t slot_key = slot.key.load(std::memory_order_relaxed);
    if (slot_key == stored) {
      slot.value.store(slot.value.load(std::memory_order_relaxed) + amount,
                       std::memory_order_relaxed);
      return;
    }
    if (slot_key == 0) {
      // Only this worker writes: the value first, then the key that publishes it.
      slot.value.store(amount, std::memory_order_relaxed);
      slot.key.store(stored, std::memory_order_release);
      return;
    }
  }
  dropped_.store(dropped_.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

void RareCounters::add(std::string_view family, std::string_view label, std::uint64_t amount) {
  std::string key;
  key.reserve(family.size() + 1 + label.size());
  key.append(family).push_back('\0');
  key.append(label);
  std::lock_guard lock(mu_);
  for (auto& [k, v] : items_) {
    if (k == key) {
      v += amount;
      return;
    }
  }
  items_.emplace_back(std::move(key), amount);
}

std::vector<std::pair<std::string, std::uint64_t>> RareCounters::snapshot(
    std::string_view family) const {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  std::lock_guard lock(mu_);
  for (const auto& [k, v] : items_) {
    const auto nul = k.find('\0');
    if (std::string_view(k).substr(0, nul) == family) out.emplace_back(k.substr(nul + 1), v);
  }
  return out;
}

RareCounters& rare() {
  static RareCounters counters;
  return counters;
}

WorkerMetrics& Registry::add_worker() {
  workers_.push_back(std::make_unique<WorkerMetrics>());
  return *workers_.back();
}

}  // namespace llmux::gateway::metrics
