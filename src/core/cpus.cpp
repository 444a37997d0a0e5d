// SPDX-License-Identifier: Apache-2.0
#include "core/cpus.hpp"

#include <sched.h>
#include <unistd.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

namespace llmux {

namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t' || text.front() == '\n'))
    text.remove_prefix(1);
  while (!text.empty() &&
         (text.back() == ' ' || text.back() == '\t' || text.back() == '\n' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

std::optional<long long> number(std::string_view text) {
  text = trim(text);
  long long value = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || p != text.data() + text.size()) return std::nullopt;
  return value;
}

std::string read_file(const std::string& path) {
  std::ifstream file(path);
  if (!file) return {};
  std::ostringstream contents;
  contents << file.rdbuf();
  return contents.str();
}

}  // namespace

std::optional<std::string> cgroup_path(std::string_view text, std::string_view controller) {
  while (!text.empty()) {
    const auto newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    const auto first_colon = line.find(':');
    const auto second_colon =
        first_colon == std::string_view::npos ? first_colon : line.find(':', first_colon + 1);
    if (second_colon != std::string_view::npos) {
      const std::string_view id = line.substr(0, first_colon);
      std::string_view ctrls = line.substr(first_colon + 1, second_colon - first_colon - 1);
      const std::string_view path = trim(line.substr(second_colon + 1));
      if (controller.empty()) {
        if (id == "0" && ctrls.empty()) return std::string(path);
      } else {
        while (!ctrls.empty()) {
          const auto comma = ctrls.find(',');
          if (ctrls.substr(0, comma) == controller) return std::string(path);
          if (comma == std::string_view::npos) break;
          ctrls.remove_prefix(comma + 1);
        }
      }
    }
    if (newline == std::string_view::npos) break;
    text.remove_prefix(newline + 1);
  }
  return std::nullopt;
}

std::optional<double> cpu_max_quota(std::string_view cpu_max) {
  cpu_max = trim(cpu_max);
  const auto space = cpu_max.find(' ');
  if (space == std::string_view::npos) return std::nullopt;
  const auto quota = number(cpu_max.substr(0, space));  // "max": no number, unlimited
  const auto period = number(cpu_max.substr(space + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<double> cfs_quota(std::string_view quota_us, std::string_view period_us) {
  const auto quota = number(quota_us);
  const auto period = number(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

int cpus_for(int affinity, std::optional<double> quota) {
  int count = std::max(1, affinity);
  if (quota && *quota > 0)
    count = std::min(count, std::max(1, static_cast<int>(std::ceil(*quota - 1e-9))));
  return count;
}

std::string CpuBudget::describe() const {
  std::string description =
      fmt::format("{} (affinity mask: {} of {} cores", cpus, affinity, machine);
  if (quota) description += fmt::format("; cgroup CPU quota: {:g} CPUs", *quota);
  return description + ")";
}

CpuBudget usable_cpus() {
  CpuBudget budget;
  budget.machine = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  budget.affinity =
      ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : budget.machine;
  if (budget.affinity <= 0) budget.affinity = budget.machine;
  // cgroup v2 first, then v1's cpu controller: the process's own group, then the hierarchy's
  // root (where a container sees its own group mounted).
  const std::string groups = read_file("/proc/self/cgroup");
  if (const auto path = cgroup_path(groups)) {
    for (const std::string& dir : {"/sys/fs/cgroup" + *path, std::string("/sys/fs/cgroup")}) {
      const std::string text = read_file(dir + "/cpu.max");
      if (text.empty()) continue;
      budget.quota = cpu_max_quota(text);
      break;
    }
  }
  if (!budget.quota) {
    const auto path = cgroup_path(groups, "cpu");
    for (const std::string& dir :
         {"/sys/fs/cgroup/cpu" + path.value_or("/"), std::string("/sys/fs/cgroup/cpu")}) {
      const std::string quota = read_file(dir + "/cpu.cfs_quota_us");
      if (quota.empty()) continue;
      budget.quota = cfs_quota(quota, read_file(dir + "/cpu.cfs_period_us"));
      break;
    }
  }
  budget.cpus = cpus_for(budget.affinity, budget.quota);
  return budget;
}

}  // namespace llmux
