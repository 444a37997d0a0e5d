// SPDX-License-Identifier: Apache-2.0
// Faults of one request: the `--fault-*` flags drawn per request, and the `X-Llmux-Fault` header.
#include "sim/faults.hpp"

#include <gtest/gtest.h>

namespace llmux::sim {
namespace {

RequestFaults parse(std::string_view header) {
  RequestFaults f;
  apply_fault_header(f, header);
  return f;
}

TEST(SimFaultHeader, EmptyChangesNothing) {
  const RequestFaults f = parse("");
  EXPECT_EQ(f.error_status, 0);
  EXPECT_EQ(f.close_after, -1);
  EXPECT_EQ(f.stall_after, -1);
  EXPECT_EQ(f.latency_ms, 0);
}

TEST(SimFaultHeader, EveryKey) {
  const RequestFaults f = parse("error=503, close-after=5, stall-after=2, latency-ms=50.5");
  EXPECT_EQ(f.error_status, 503);
  EXPECT_EQ(f.close_after, 5);
  EXPECT_EQ(f.stall_after, 2);
  EXPECT_DOUBLE_EQ(f.latency_ms, 50.5);
}

TEST(SimFaultHeader, SpacesAndEmptyItems) {
  const RequestFaults f = parse("  close-after=3,,   error= 429 ,");
  EXPECT_EQ(f.close_after, 3);
  EXPECT_EQ(f.error_status, 429);  // strtod skips leading spaces and stops at trailing ones
}

TEST(SimFaultHeader, UnknownKeysAndItemsWithoutEqualsAreIgnored) {
  const RequestFaults f = parse("bogus=1, stall-after, close-after=7, error =500");
  EXPECT_EQ(f.close_after, 7);
  EXPECT_EQ(f.stall_after, -1);
  EXPECT_EQ(f.error_status, 0);  // "error " (space before '=') is not a key
}

TEST(SimFaultHeader, NonNumbersReadAsZeroAndTrailingJunkIsIgnored) {
  const RequestFaults f = parse("error=abc, close-after=4tokens, latency-ms=1e2");
  EXPECT_EQ(f.error_status, 0);
  EXPECT_EQ(f.close_after, 4);
  EXPECT_DOUBLE_EQ(f.latency_ms, 100.0);
}

TEST(SimFaultHeader, OverridesTheFlagsAndLastItemWins) {
  RequestFaults f;
  f.error_status = 500;
  f.close_after = 10;
  f.latency_ms = 20;
  apply_fault_header(f, "close-after=1, close-after=2");
  EXPECT_EQ(f.error_status, 500);
  EXPECT_EQ(f.close_after, 2);
  EXPECT_EQ(f.latency_ms, 20);
}

TEST(SimFaultDraw, NoFlagsNoFaults) {
  std::mt19937_64 rng(1);
  const RequestFaults f = draw_faults(FaultConfig{}, rng);
  EXPECT_EQ(f.error_status, 0);
  EXPECT_EQ(f.close_after, -1);
  EXPECT_EQ(f.stall_after, -1);
  EXPECT_EQ(f.latency_ms, 0);
}

TEST(SimFaultDraw, RateOneAlwaysApplies) {
  FaultConfig fc;
  fc.error_rate = 1.0;
  fc.error_statuses = {429};
  fc.close_after = 3;
  fc.stall_after = 4;
  fc.added_latency_ms = 12.5;
  std::mt19937_64 rng(7);
  for (int i = 0; i < 100; ++i) {
    const RequestFaults f = draw_faults(fc, rng);
    EXPECT_EQ(f.error_status, 429);
    EXPECT_EQ(f.close_after, 3);
    EXPECT_EQ(f.stall_after, 4);
    EXPECT_DOUBLE_EQ(f.latency_ms, 12.5);
  }
}

TEST(SimFaultDraw, RatesAreFractionsOfRequests) {
  FaultConfig fc;
  fc.error_rate = 0.25;
  fc.error_statuses = {500, 503};
  fc.close_after = 1;
  fc.close_rate = 0.0;
  std::mt19937_64 rng(42);
  int errors = 0, s500 = 0;
  constexpr int kN = 20000;
  for (int i = 0; i < kN; ++i) {
    const RequestFaults f = draw_faults(fc, rng);
    EXPECT_EQ(f.close_after, -1);
    if (f.error_status != 0) {
      ++errors;
      EXPECT_TRUE(f.error_status == 500 || f.error_status == 503);
      if (f.error_status == 500) ++s500;
    }
  }
  EXPECT_NEAR(static_cast<double>(errors) / kN, 0.25, 0.02);
  EXPECT_NEAR(static_cast<double>(s500) / errors, 0.5, 0.05);
}

}  // namespace
}  // namespace llmux::sim
