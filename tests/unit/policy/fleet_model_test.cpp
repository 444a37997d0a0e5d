// SPDX-License-Identifier: Apache-2.0
// Policies against a model of a fleet (statistical simulation test): closed-loop clients send
// requests of varied output lengths to backends whose per-stream decode rate falls with their
// concurrency as vLLM's does (one stream ~50 tok/s, eight ~300 tok/s in all, the seed's Spark);
// every pick goes through pick_and_acquire, so the in-flight counts the policies read are the
// slots the model's requests hold. Checked: on a mixed fleet (one backend three times slower)
// load-aware policies give more tokens than round robin and send most work to the fast machine;
// on an even fleet they cost nothing.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "test_util.hpp"

namespace llmux::policy {
namespace {

using testing::Pool;
using testing::request;

struct Model {
  double single_rate;  // tokens/s of one stream alone
};

/// Tokens per second of each of `n` streams on a backend whose lone stream runs at `r1`:
/// n·r1/(1+β(n−1)) in all, β from the seed (8 streams give 6× one).
double per_stream_rate(double r1, int n) {
  constexpr double beta = (8.0 / 6.0 - 1.0) / 7.0;
  return r1 / (1.0 + beta * (n - 1));
}

struct Result {
  double tokens = 0;                // generated in the run, all backends
  std::vector<double> per_backend;  // generated per backend
};

Result run(const std::string& policy_name, const std::vector<Model>& fleet, int clients,
           double seconds, std::uint32_t seed) {
  Pool pool(std::vector<int>(fleet.size(), 1));
  auto policy = make_policy(policy_name);
  EXPECT_TRUE(policy) << policy_name;
  if (policy) policy->build(pool.all(), nullptr);
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> out_len(32, 512);
  struct Req {
    upstream::Slot slot;
    double left = 0;
  };
  std::vector<Req> reqs(static_cast<std::size_t>(clients));
  auto send = [&](Req& r) {
    auto ctx = request();
    const int n = out_len(rng);
    ctx.tokens = 200 + n;
    TriedSet tried;
    r.slot = pick_and_acquire(*policy, ctx, pool.all(), tried);
    r.left = n;
  };
  for (auto& r : reqs) send(r);
  Result res;
  res.per_backend.assign(fleet.size(), 0);
  const double dt = 0.01;
  int step_no = 0;
  for (double t = 0; t < seconds; t += dt, ++step_no) {
    std::vector<int> n(fleet.size(), 0);
    for (auto& r : reqs) ++n[static_cast<std::size_t>(r.slot.backend()->index)];
    // Once a simulated second, each stream reports its rate, as the gateway's relay does.
    if (step_no % 100 == 0)
      for (auto& r : reqs) {
        Backend& b = *r.slot.backend();
        const auto i = static_cast<std::size_t>(b.index);
        b.observations.capacity.add_sample(n[i], per_stream_rate(fleet[i].single_rate, n[i]));
      }
    for (auto& r : reqs) {
      const auto i = static_cast<std::size_t>(r.slot.backend()->index);
      const double step = std::min(r.left, per_stream_rate(fleet[i].single_rate, n[i]) * dt);
      r.left -= step;
      res.tokens += step;
      res.per_backend[i] += step;
      if (r.left <= 1e-9) {
        r.slot.reset();  // the response ended: its in-flight slot goes back
        send(r);
      }
    }
  }
  return res;
}

const std::vector<Model> kMixed{{50.0}, {50.0 / 3}};
const std::vector<Model> kEven{{50.0}, {50.0}};

TEST(FleetModel, LoadAwarePoliciesBeatRoundRobinOnAMixedFleet) {
  const Result rr = run("round_robin", kMixed, 16, 600, 1);
  const Result rnd = run("random", kMixed, 16, 600, 1);
  for (const char* name : {"least_inflight", "power_of_two", "adaptive"}) {
    const Result r = run(name, kMixed, 16, 600, 1);
    // Round robin hands the slow machine half the requests, and its clients wait there.
    EXPECT_GT(r.tokens, 1.15 * rr.tokens) << name << " " << r.tokens << " vs " << rr.tokens;
    EXPECT_GT(r.tokens, 1.15 * rnd.tokens) << name;
    EXPECT_GT(r.per_backend[0] / r.tokens, 0.7) << name << ": the fast machine's share";
  }
}

TEST(FleetModel, AdaptiveLearnsTheMixedFleetAndBeatsLeastInflight) {
  const Result rr = run("round_robin", kMixed, 16, 600, 3);
  const Result li = run("least_inflight", kMixed, 16, 600, 3);
  const Result ad = run("adaptive", kMixed, 16, 600, 3);
  std::printf(
      "[model] mixed fleet, 16 clients, 600 s: tokens round_robin %.0f, least_inflight %.0f "
      "(fast share %.2f), adaptive %.0f (fast share %.2f)\n",
      rr.tokens, li.tokens, li.per_backend[0] / li.tokens, ad.tokens,
      ad.per_backend[0] / ad.tokens);
  EXPECT_GE(ad.tokens, li.tokens) << ad.tokens << " vs " << li.tokens;
  EXPECT_GT(ad.per_backend[0] / ad.tokens, li.per_backend[0] / li.tokens)
      << "adaptive sends the fast machine a larger share";
}

TEST(FleetModel, LoadAwarePoliciesCostNothingOnAnEvenFleet) {
  const Result rr = run("round_robin", kEven, 16, 600, 2);
  for (const char* name : {"least_inflight", "power_of_two", "adaptive"}) {
    const Result r = run(name, kEven, 16, 600, 2);
    EXPECT_GT(r.tokens, 0.98 * rr.tokens) << name;
    EXPECT_NEAR(r.per_backend[0] / r.tokens, 0.5, 0.03) << name;
  }
}

}  // namespace
}  // namespace llmux::policy
