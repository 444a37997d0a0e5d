// SPDX-License-Identifier: Apache-2.0
// The policy registry and what every policy shares (available, pick, pick_and_acquire).
#include <algorithm>
#include <charconv>
#include <functional>
#include <type_traits>

#include <fmt/format.h>

#include "policy/adaptive.hpp"
#include "policy/consistent_hash.hpp"
#include "policy/least_inflight.hpp"
#include "policy/least_load.hpp"
#include "policy/policy.hpp"
#include "policy/power_of_two.hpp"
#include "policy/prefix_aware.hpp"
#include "policy/random.hpp"
#include "policy/round_robin.hpp"

namespace llmux::policy {

bool available(const Backend& backend, const TriedSet& tried, std::int64_t now_ns) {
  return !tried.contains(backend) && backend.has_capacity() && backend.usable(now_ns) &&
         !(backend.on_trial() && backend.trial_taken.load(std::memory_order_relaxed));
}

Backend* Policy::pick(const PickContext& ctx, std::span<Backend* const> candidates,
                      const TriedSet& tried, std::int64_t now_ns) {
  return select(ctx, candidates, [&](const Backend& backend) {
    return available(backend, tried, now_ns) &&
           (ctx.pinned || !backend.draining.load(std::memory_order_relaxed));
  });
}

namespace {

/// When every backend of the route is out: the least recently failed one that is not tried and
/// has room, so that requests are tried rather than refused by the gateway alone.
upstream::Slot last_resort(std::span<Backend* const> candidates, TriedSet& tried,
                           std::int64_t now_ns, std::int64_t tokens, bool pinned) {
  for (Backend* backend : candidates)  // not every backend is out: no last resort
    if (backend->usable(now_ns) &&
        !(backend->on_trial() && backend->trial_taken.load(std::memory_order_relaxed)))
      return {};
  Backend* best = nullptr;
  for (Backend* backend : candidates) {
    if (tried.contains(*backend) || !backend->has_capacity() ||
        (!pinned && backend->draining.load(std::memory_order_relaxed)))
      continue;
    if (!best || backend->last_failure_ns.load(std::memory_order_relaxed) <
                     best->last_failure_ns.load(std::memory_order_relaxed))
      best = backend;
  }
  if (!best || !best->try_acquire()) return {};
  return upstream::Slot{best, false, tokens};
}

}  // namespace

upstream::Slot pick_and_acquire(Policy& policy, const PickContext& ctx,
                                std::span<Backend* const> candidates, TriedSet& tried,
                                std::int64_t now_ns) {
  // Each round either returns or adds one backend to `tried`, so it ends.
  for (std::size_t round = 0; round <= candidates.size(); ++round) {
    Backend* backend = policy.pick(ctx, candidates, tried, now_ns);
    if (!backend) break;
    if (!backend->try_acquire()) {
      tried.add(*backend);  // full since select() looked: not this one, for this request
      continue;
    }
    if (!backend->on_trial()) return upstream::Slot{backend, false, ctx.tokens};
    bool taken = false;
    if (backend->trial_taken.compare_exchange_strong(taken, true, std::memory_order_relaxed))
      return upstream::Slot{backend, /*trial=*/true, ctx.tokens};
    backend->release();  // another request holds its trial
    tried.add(*backend);
  }
  return last_resort(candidates, tried, now_ns, ctx.tokens, ctx.pinned);
}

namespace {

using Factory = std::function<std::unique_ptr<Policy>(const Options&, std::string*)>;

/// A policy without options: any option is an error.
template <typename P>
Factory without_options(std::string_view name) {
  return [name](const Options& options, std::string* error) -> std::unique_ptr<Policy> {
    if (!options.empty()) {
      if (error)
        *error = fmt::format("policy '{}' has no options (got '{}')", name, options.begin()->first);
      return nullptr;
    }
    return std::make_unique<P>();
  };
}

/// Reads the options a policy knows into its settings; any other option, or a value that does
/// not read, is an error.
class OptionReader {
 public:
  OptionReader(std::string_view policy, const Options& options, std::string* error)
      : policy_(policy), options_(options), error_(error) {}

  template <typename T>
  void number(const char* key, T& out, double lo, double hi) {
    auto it = options_.find(key);
    if (it == options_.end()) return;
    seen_++;
    double v = 0;
    const std::string& text = it->second;
    const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || p != text.data() + text.size() || !(v >= lo && v <= hi) ||
        (std::is_integral_v<T> && v != static_cast<double>(static_cast<long long>(v)))) {
      fail(fmt::format("policy '{}': option {} must be {} {}-{} (got '{}')", policy_, key,
                       std::is_integral_v<T> ? "a whole number" : "a number", lo, hi, text));
      return;
    }
    out = static_cast<T>(v);
  }
  void string(const char* key, std::string& out) {
    auto it = options_.find(key);
    if (it == options_.end()) return;
    seen_++;
    out = it->second;
  }
  void fail(std::string why) {
    if (ok_ && error_) *error_ = std::move(why);
    ok_ = false;
  }
  /// True when every option was known and read.
  bool done() {
    if (ok_ && seen_ != options_.size()) {
      for (const auto& [name, value] : options_)
        if (!known(name)) {
          fail(fmt::format("policy '{}' has no option '{}'", policy_, name));
          break;
        }
    }
    return ok_;
  }
  void know(std::initializer_list<std::string_view> keys) { known_ = keys; }

 private:
  bool known(const std::string& name) const {
    return std::find(known_.begin(), known_.end(), name) != known_.end();
  }
  std::string_view policy_;
  const Options& options_;
  std::string* error_;
  std::vector<std::string_view> known_;
  std::size_t seen_ = 0;
  bool ok_ = true;
};

std::unique_ptr<Policy> make_consistent_hash(const Options& options, std::string* error) {
  ConsistentHash::Settings settings;
  OptionReader reader("consistent_hash", options, error);
  reader.know({"key", "load_factor", "replicas"});
  reader.string("key", settings.key);
  reader.number("load_factor", settings.load_factor, 0, 100);
  reader.number("replicas", settings.replicas, 1, 10000);
  if (settings.load_factor > 0 && settings.load_factor < 1)
    reader.fail("policy 'consistent_hash': option load_factor must be 0 (no bound) or at least 1");
  if (settings.key != "auto" && settings.key != "prompt_cache_key" && settings.key != "user" &&
      !(settings.key.starts_with("header:") && settings.key.size() > 7))
    reader.fail(fmt::format(
        "policy 'consistent_hash': option key must be auto, header:NAME, prompt_cache_key or "
        "user (got '{}')",
        settings.key));
  if (!reader.done()) return nullptr;
  return std::make_unique<ConsistentHash>(std::move(settings));
}

std::unique_ptr<Policy> make_prefix_aware(const Options& options, std::string* error) {
  PrefixAware::Settings settings;
  OptionReader reader("prefix_aware", options, error);
  reader.know({"block_chars", "table_blocks", "min_match", "balance_abs", "balance_rel"});
  reader.number("block_chars", settings.block_chars, 8, 65536);
  reader.number("table_blocks", settings.table_blocks, 64, 1 << 26);
  reader.number("min_match", settings.min_match, 0, 1);
  reader.number("balance_abs", settings.balance_abs, 0, 1000000);
  reader.number("balance_rel", settings.balance_rel, 1, 1000);
  if (!reader.done()) return nullptr;
  return std::make_unique<PrefixAware>(settings);
}

struct RandomUniform : Random {
  RandomUniform() : Random(false) {}
};
struct RandomWeighted : Random {
  RandomWeighted() : Random(true) {}
};

struct Entry {
  std::string name;
  Factory make;
};

const std::vector<Entry>& registry() {
  static const std::vector<Entry> entries{
      {"round_robin", without_options<RoundRobin>("round_robin")},
      {"first", without_options<First>("first")},
      {"least_inflight", without_options<LeastInflight>("least_inflight")},
      {"adaptive", without_options<Adaptive>("adaptive")},
      {"power_of_two", without_options<PowerOfTwo>("power_of_two")},
      {"random", without_options<RandomUniform>("random")},
      {"weighted", without_options<RandomWeighted>("weighted")},
      {"consistent_hash", make_consistent_hash},
      {"prefix_aware", make_prefix_aware},
      {"least_load", without_options<LeastLoad>("least_load")},
  };
  return entries;
}

}  // namespace

std::unique_ptr<Policy> make_policy(std::string_view name, const Options& options,
                                    std::string* error) {
  for (const auto& entry : registry())
    if (entry.name == name) return entry.make(options, error);
  if (error) *error = fmt::format("unknown policy '{}'", name);
  return nullptr;
}

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& entry : registry()) out.push_back(entry.name);
    return out;
  }();
  return names;
}

}  // namespace llmux::policy
