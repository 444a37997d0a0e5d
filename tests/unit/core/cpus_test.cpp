// SPDX-License-Identifier: Apache-2.0
// The CPU budget behind `threads: 0` (core/cpus.hpp): cgroup paths, v2 and v1 quotas, and the
// worker count they allow.
#include "core/cpus.hpp"

#include <gtest/gtest.h>

namespace llmux {
namespace {

TEST(Cpus, CgroupPathsV2AndV1) {
  const std::string hybrid =
      "9:name=systemd:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/docker/123\n0::/user.slice\n";
  EXPECT_EQ(cgroup_path(hybrid), "/user.slice");
  EXPECT_EQ(cgroup_path(hybrid, "cpu"), "/docker/123");
  EXPECT_EQ(cgroup_path(hybrid, "cpuacct"), "/docker/123");
  EXPECT_EQ(cgroup_path(hybrid, "cpuset"), std::nullopt);
  EXPECT_EQ(cgroup_path("0::/\n"), "/");
  EXPECT_EQ(cgroup_path("1:cpu:/\n"), std::nullopt) << "no v2 group";
  EXPECT_EQ(cgroup_path(""), std::nullopt);
  EXPECT_EQ(cgroup_path("garbage"), std::nullopt);
}

TEST(Cpus, QuotasV2AndV1) {
  EXPECT_EQ(cpu_max_quota("max 100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(*cpu_max_quota("250000 100000\n"), 2.5);
  EXPECT_DOUBLE_EQ(*cpu_max_quota("50000 100000"), 0.5);
  EXPECT_EQ(cpu_max_quota(""), std::nullopt);
  EXPECT_EQ(cpu_max_quota("100000"), std::nullopt);
  EXPECT_EQ(cpu_max_quota("0 100000"), std::nullopt);
  EXPECT_EQ(cfs_quota("-1\n", "100000\n"), std::nullopt);
  EXPECT_DOUBLE_EQ(*cfs_quota("300000\n", "100000\n"), 3.0);
  EXPECT_EQ(cfs_quota("", ""), std::nullopt);
}

TEST(Cpus, WorkersFromAffinityAndQuota) {
  EXPECT_EQ(cpus_for(16, std::nullopt), 16);
  EXPECT_EQ(cpus_for(16, 2.5), 3) << "a partial CPU still gets a worker";
  EXPECT_EQ(cpus_for(2, 8.0), 2) << "the mask bounds it too";
  EXPECT_EQ(cpus_for(4, 0.5), 1);
  EXPECT_EQ(cpus_for(0, std::nullopt), 1);
  EXPECT_EQ(cpus_for(8, 4.0), 4);
}

TEST(Cpus, ThisProcessHasABudget) {
  const CpuBudget b = usable_cpus();
  EXPECT_GE(b.cpus, 1);
  EXPECT_LE(b.cpus, b.affinity);
  EXPECT_LE(b.affinity, b.machine);
  EXPECT_NE(b.describe().find("affinity mask"), std::string::npos);
}

}  // namespace
}  // namespace llmux
