// SPDX-License-Identifier: Apache-2.0
#include "sim/faults.hpp"

#include <cstdlib>
#include <string>

namespace llmux::sim {

RequestFaults draw_faults(const FaultConfig& config, std::mt19937_64& rng) {
  RequestFaults faults;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (config.error_rate > 0 && uniform(rng) < config.error_rate && !config.error_statuses.empty())
    faults.error_status = config.error_statuses[rng() % config.error_statuses.size()];
  if (config.close_after >= 0 && uniform(rng) < config.close_rate)
    faults.close_after = config.close_after;
  if (config.stall_after >= 0 && uniform(rng) < config.stall_rate)
    faults.stall_after = config.stall_after;
  faults.latency_ms = config.added_latency_ms;
  return faults;
}

void apply_fault_header(RequestFaults& faults, std::string_view header) {
  while (!header.empty()) {
    auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    auto equals_sign = item.find('=');
    if (equals_sign == std::string_view::npos) continue;
    std::string_view key = item.substr(0, equals_sign);
    double value = std::strtod(std::string(item.substr(equals_sign + 1)).c_str(), nullptr);
    if (key == "error")
      faults.error_status = static_cast<int>(value);
    else if (key == "close-after")
      faults.close_after = static_cast<std::int64_t>(value);
    else if (key == "stall-after")
      faults.stall_after = static_cast<std::int64_t>(value);
    else if (key == "latency-ms")
      faults.latency_ms = value;
  }
}

void malform_frame(std::string& out, std::size_t start, Malformed kind) {
  if (kind == Malformed::none || start >= out.size()) return;
  std::string_view frame(out);
  frame.remove_prefix(start);
  if (!frame.ends_with("\n\n")) return;
  if (kind == Malformed::sse) {
    out.pop_back();  // the blank line
    out += kGarbageLine;
    return;
  }
  std::size_t data = frame.starts_with("data: ") ? 0 : frame.find("\ndata: ");
  if (data == std::string_view::npos) return;
  if (data != 0) ++data;
  const std::size_t json_begin = start + data + 6;
  const std::size_t json_end = out.size() - 2;  // the data line's '\n', then the blank line
  if (json_end <= json_begin + 1) return;
  const std::size_t len = json_end - json_begin;
  out.erase(json_begin + len / 2, len - len / 2);  // keeps the first half, then "\n\n"
}

void malform_body(std::string& body, Malformed kind) {
  if (kind == Malformed::json) body.resize(body.size() / 2);
}

}  // namespace llmux::sim
