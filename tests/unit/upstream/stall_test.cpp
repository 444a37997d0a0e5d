// SPDX-License-Identifier: Apache-2.0
// Stall detection (upstream/stall.hpp): a backend whose streams all stop is judged stalled fast;
// one silent stream is not, while another stream or a completed response vouches for the backend.
#include "upstream/stall.hpp"

#include <gtest/gtest.h>

namespace llmux::upstream {
namespace {

using namespace std::chrono_literals;
constexpr std::int64_t kMs = 1'000'000;
using V = StallWatch::Verdict;

struct StallTest : ::testing::Test {
  Backend b;
  OutlierSettings s;
  std::string why;
  void SetUp() override { b.name = "b"; }
};

TEST_F(StallTest, EveryFlowingStreamSilentIsAStallAfterHalfTheTimeout) {
  StallWatch x(b, 2000ms, 60000ms), y(b, 2000ms, 60000ms);
  for (std::int64_t t = 0; t <= 1500; t += 50) {  // both produce for 1.5 s: flowing
    x.on_bytes(t * kMs);
    y.on_bytes(t * kMs);
  }
  EXPECT_EQ(b.flowing.load(), 2);
  EXPECT_EQ(x.judge(2400 * kMs, why), V::wait);  // 0.9 s of silence
  EXPECT_EQ(x.judge(2501 * kMs, why), V::stalled);
  EXPECT_NE(why.find("any of its 2 flowing streams"), std::string::npos) << why;
}

TEST_F(StallTest, OneSilentStreamWaitsWhileAnotherVouchesForTheBackend) {
  StallWatch quiet(b, 2000ms, 10000ms), busy(b, 2000ms, 10000ms);
  for (std::int64_t t = 0; t <= 1500; t += 50) {
    quiet.on_bytes(t * kMs);
    busy.on_bytes(t * kMs);
  }
  // `quiet` is preempted; `busy` goes on producing.
  for (std::int64_t t = 1550; t <= 9000; t += 50) busy.on_bytes(t * kMs);
  EXPECT_EQ(quiet.judge(9000 * kMs, why), V::wait);
  // ... until the idle timeout, which ends it in any case.
  EXPECT_EQ(quiet.judge(11501 * kMs, why), V::idle);
}

TEST_F(StallTest, AStreamThatNeverFlowedIsStalledAfterTheWholeTimeoutWithoutSignsOfLife) {
  // A stream that stops after a few tokens never flows, so it cannot vouch for the backend.
  StallWatch x(b, 2000ms, 60000ms);
  x.on_bytes(100 * kMs);
  x.on_bytes(150 * kMs);
  EXPECT_EQ(b.flowing.load(), 0);
  EXPECT_EQ(x.judge(2100 * kMs, why), V::wait);
  EXPECT_EQ(x.judge(2151 * kMs, why), V::stalled);
  // A response that completed meanwhile is a sign of life: no stall.
  StallWatch y(b, 2000ms, 60000ms);
  y.on_bytes(100 * kMs);
  note_progress(b, 1000 * kMs);
  EXPECT_EQ(y.judge(2200 * kMs, why), V::wait);
  EXPECT_EQ(y.judge(3001 * kMs, why), V::stalled);
}

TEST_F(StallTest, OffBeforeTheFirstByteAndWhenDisabled) {
  StallWatch before(b, 2000ms, 60000ms);
  EXPECT_FALSE(before.active());
  EXPECT_EQ(before.read_wait(), 60000ms);
  StallWatch off(b, 0ms, 60000ms);
  off.on_bytes(1);
  EXPECT_FALSE(off.active());
  EXPECT_EQ(off.read_wait(), 60000ms);
}

TEST_F(StallTest, FlowingCountIsGivenBackWhenTheStreamEnds) {
  {
    StallWatch x(b, 200ms, 1000ms);
    x.on_bytes(0);
    x.on_bytes(150 * kMs);
    EXPECT_EQ(b.flowing.load(), 1);
    x.end();
    EXPECT_EQ(b.flowing.load(), 0);
    x.on_bytes(300 * kMs);  // ended: counts nothing more
    EXPECT_EQ(b.flowing.load(), 0);
  }
  {
    StallWatch y(b, 200ms, 1000ms);
    y.on_bytes(0);
    y.on_bytes(150 * kMs);
  }
  EXPECT_EQ(b.flowing.load(), 0);
}

TEST_F(StallTest, AStallEjectsOnceAndNotWhenOutlierDetectionIsOff) {
  auto ev = record_stall(b, 1000 * kMs, s, "no token");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::ejected);
  EXPECT_NE(ev->message.find("backend b ejected for 5s: stalled (no token)"), std::string::npos)
      << ev->message;
  EXPECT_FALSE(b.usable(2000 * kMs));
  EXPECT_FALSE(record_stall(b, 1001 * kMs, s, "again"));  // out already
  Backend c;
  s.enabled = false;
  EXPECT_FALSE(record_stall(c, 1000 * kMs, s, "off"));
  EXPECT_TRUE(c.usable(1000 * kMs));
}

TEST_F(StallTest, AProbeBringsAStalledBackendBackOrKeepsItOut) {
  ASSERT_TRUE(record_stall(b, 1000 * kMs, s, "no token"));
  EXPECT_TRUE(b.stalled.load());
  EXPECT_EQ(state_name(b, 1001 * kMs), "stalled");
  // A failed probe keeps it out past its back-off (5 s), so no trial request is risked on it.
  EXPECT_FALSE(record_probe(b, false, 5900 * kMs, 3000ms, "timeout"));
  EXPECT_FALSE(b.usable(6100 * kMs));
  auto ev = record_probe(b, true, 7000 * kMs, 3000ms, "16 tokens in 300 ms");
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->kind, HealthEvent::Kind::readmitted);
  EXPECT_NE(ev->message.find("a probe generation completed"), std::string::npos);
  EXPECT_FALSE(b.stalled.load());
  EXPECT_TRUE(b.usable(7000 * kMs));
  EXPECT_FALSE(b.on_trial()) << "a passed probe is as good as a trial";
  EXPECT_FALSE(record_probe(b, true, 8000 * kMs, 3000ms, "again")) << "not stalled any more";
}

}  // namespace
}  // namespace llmux::upstream
