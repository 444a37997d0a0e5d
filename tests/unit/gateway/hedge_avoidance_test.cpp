// SPDX-License-Identifier: Apache-2.0
// The backends a route that hedges keeps new requests off (gateway/hedge.hpp: avoided_by_hedging):
// one whose streams' tokens come more than kSlowerThanPeers times further apart than those of the
// fastest other backend of the route, whatever the route's size; one that lost a race lately;
// nobody where a backend has no timed peer, or where the whole fleet is slower alike.
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>

#include "gateway/hedge.hpp"

namespace llmux::gateway {
namespace {

constexpr std::int64_t kMillisecondNs = 1'000'000;
constexpr std::int64_t kNow = 1'000'000 * kMillisecondNs;

/// A route of three backends, A, B and C, whose token gaps the test sets.
class HedgeAvoidance : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::size_t i = 0; i < backends_.size(); ++i) {
      backends_[i].index = static_cast<int>(i);
      backends_[i].name = std::string(1, static_cast<char>('A' + i));
      route_.backends.push_back(&backends_[i]);
    }
    route_.cfg = &config_;
  }
  /// Backend `index`'s streams' tokens came `gap_ms` apart (none: it is not timed).
  void time(std::size_t index, std::optional<int> gap_ms) {
    if (gap_ms) backends_[index].observations.pace.record(*gap_ms * kMillisecondNs, 1, kNow);
  }
  void times(std::optional<int> a, std::optional<int> b, std::optional<int> c) {
    time(0, a);
    time(1, b);
    time(2, c);
  }
  /// The names of the backends avoided now, in order ("" for none).
  std::string avoided() const {
    const upstream::TriedSet set = avoided_by_hedging(route_, kNow);
    std::string names;
    for (const auto& backend : backends_)
      if (set.contains(backend)) names += backend.name;
    return names;
  }

  config::Route config_;
  std::array<upstream::Backend, 3> backends_;
  RouteRuntime route_;
};

/// A, B and C's token gaps (none: not timed), and the backends avoided then.
struct PaceCase {
  const char* name;
  std::optional<int> a, b, c;
  const char* avoided;
};

class HedgeAvoidanceByPace : public HedgeAvoidance,
                             public ::testing::WithParamInterface<PaceCase> {};

TEST_P(HedgeAvoidanceByPace, AvoidsTheBackendsSlowerThanTheirFastestPeerByTheRatio) {
  const PaceCase& pace = GetParam();
  times(pace.a, pace.b, pace.c);
  EXPECT_EQ(avoided(), pace.avoided);
}

INSTANTIATE_TEST_SUITE_P(
    Gaps, HedgeAvoidanceByPace,
    ::testing::Values(PaceCase{"TheOneSlowBackendOfThree", 10, 12, 100, "C"},
                      // B, the fastest, is compared with C, not with itself.
                      PaceCase{"TheFastestJudgedAgainstTheSecondFastest", 100, 10, 12, "A"},
                      // C at 45 ms is more than 4x A's 10 ms, as B at 100 ms is.
                      PaceCase{"EveryBackendPastTheRatio", 10, 100, 45, "BC"},
                      PaceCase{"AFleetSlowerAlike", 100, 120, 150, ""},
                      PaceCase{"NoTimedPeer", 100, std::nullopt, std::nullopt, ""},
                      PaceCase{"AnUntimedBackendBesideTimedOnes", 10, std::nullopt, 100, "C"}),
    [](const ::testing::TestParamInfo<PaceCase>& info) { return std::string(info.param.name); });

TEST_F(HedgeAvoidance, APrefillOnlyBackendIsNoPeer) {
  // C runs only prefill legs (disaggregation): its short gaps say nothing of A's and B's.
  route_.prefill_only.add(backends_[2]);
  times(10, 12, 1);
  EXPECT_EQ(avoided(), "");
}

TEST_F(HedgeAvoidance, ABackendThatLostARaceIsAvoidedUntilItsTimeEnds) {
  backends_[1].avoided_until_ns = kNow + 1;
  EXPECT_EQ(avoided(), "B");
  backends_[1].avoided_until_ns = kNow;
  EXPECT_EQ(avoided(), "");
}

}  // namespace
}  // namespace llmux::gateway
