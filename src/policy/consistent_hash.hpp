// SPDX-License-Identifier: Apache-2.0
#pragma once
// consistent_hash: requests with the same session key go to the same backend, and when a
// backend leaves (removed, ejected, failing its checks) only its keys move — to the next
// backend on the ring — while every other key stays where its cache is.
//
// The key: the `key` option — `header:NAME` (e.g. header:X-Session-ID), `prompt_cache_key` (the
// body's), `user` (the body's), or `auto` (the default: the X-Session-ID header, else
// prompt_cache_key, else user). A request without one goes to the least loaded backend
// (least_inflight).
//
// Bounded load (Mirrokni, Thorup and Zadimoghaddam, "Consistent Hashing with Bounded Loads"):
// no backend takes a request while it holds `load_factor` times the mean in-flight count of the
// usable backends (this request counted, rounded up; and at least one more than the even
// share, so that at low load one request more or less moves nothing); the key then goes on
// along the ring to the next backend under the bound. 0 turns the bound off.
//
// The ring (`replicas` points per backend and unit of weight) holds the usable backends only. It
// is rebuilt when the set of usable backends changes — a reload (a new policy), a backend out
// or back — never per request: each request compares a 64-bit membership mask and reads the ring
// through an atomic shared_ptr.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "policy/least_inflight.hpp"
#include "policy/policy.hpp"

namespace llmux::policy {

/// The session key of a request by `spec` ("auto", "header:NAME", "prompt_cache_key", "user");
/// "" when it has none.
std::string_view session_key(const PickContext& ctx, std::string_view spec);

class ConsistentHash final : public Policy {
 public:
  struct Settings {
    std::string key = "auto";
    double load_factor = 1.25;
    int replicas = 160;
  };
  explicit ConsistentHash(Settings settings) : settings_(std::move(settings)) {}
  /// The policy with its options (`key`, `load_factor`, `replicas`); nullptr and the reason in
  /// `*error` for an unknown option or a bad value.
  static std::unique_ptr<Policy> from_options(const Options& options, std::string* error);
  std::string_view name() const override { return "consistent_hash"; }
  Backend* select(const PickContext& ctx, std::span<Backend* const> candidates,
                  FunctionRef<bool(const Backend&)> accept) override;

  struct Ring {
    std::uint64_t members = 0;    // Backend::index bits of the usable backends it holds
    std::vector<Backend*> order;  // the candidates it was built from
    std::vector<std::pair<std::uint64_t, Backend*>> points;  // sorted by hash
  };
  /// The ring for these candidates now (built again when its membership changed).
  std::shared_ptr<const Ring> ring(std::span<Backend* const> candidates, std::int64_t now_ns);
  /// How many times the ring was built (tests: not per request).
  std::uint64_t builds() const { return builds_.load(std::memory_order_relaxed); }

 private:
  Settings settings_;
  std::atomic<std::shared_ptr<const Ring>> ring_;
  std::atomic<std::uint64_t> builds_{0};
  LeastInflight fallback_;
};

}  // namespace llmux::policy
