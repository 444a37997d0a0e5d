// SPDX-License-Identifier: Apache-2.0
#pragma once
// How many CPUs this process may use: the cores of its affinity mask (taskset, cpuset) and its
// cgroup's CPU quota (a container's `--cpus`), whichever is smaller. What `threads: 0` means:
// one worker per core the process can actually run on, not per core of the machine.
//
// The parsers are pure (unit-tested on sample files); usable_cpus() reads /proc and /sys.
#include <optional>
#include <string>
#include <string_view>

namespace llmux {

/// The process's own cgroup path from /proc/self/cgroup: cgroup v2's ("0::/PATH") when
/// `controller` is empty, else that of the v1 hierarchy whose controllers include `controller`
/// ("4:cpu,cpuacct:/PATH"); nullopt when there is none.
std::optional<std::string> cgroup_path(std::string_view proc_self_cgroup,
                                       std::string_view controller = {});

/// A cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD"): the quota in CPUs (2.5 for
/// "250000 100000"), nullopt when unlimited or unreadable.
std::optional<double> cpu_max_quota(std::string_view cpu_max);

/// A cgroup v1 quota: cpu.cfs_quota_us over cpu.cfs_period_us; nullopt when -1 (none).
std::optional<double> cfs_quota(std::string_view quota_us, std::string_view period_us);

/// Workers for a quota of `quota` CPUs on `affinity` cores: min(affinity, ceil(quota)), at least 1.
int cpus_for(int affinity, std::optional<double> quota);

struct CpuBudget {
  int cpus = 1;                  // what the process may use
  int affinity = 1;              // cores in its affinity mask
  int machine = 1;               // cores of the machine (online)
  std::optional<double> quota;   // the cgroup's CPU quota, when it has one
  std::string describe() const;  // "2 (affinity mask: 2 of 16 cores; cgroup quota: 2.5 CPUs)"
};
/// This process's CPU budget, read now (never fails: 1 at least).
CpuBudget usable_cpus();

}  // namespace llmux
