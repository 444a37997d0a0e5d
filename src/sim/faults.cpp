// SPDX-License-Identifier: Apache-2.0
#include "sim/faults.hpp"

#include <cstdlib>
#include <string>

namespace llmux::sim {

RequestFaults draw_faults(const FaultConfig& fc, std::mt19937_64& rng) {
  RequestFaults faults;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  if (fc.error_rate > 0 && uniform(rng) < fc.error_rate && !fc.error_statuses.empty())
    faults.error_status = fc.error_statuses[rng() % fc.error_statuses.size()];
  if (fc.close_after >= 0 && uniform(rng) < fc.close_rate) faults.close_after = fc.close_after;
  if (fc.stall_after >= 0 && uniform(rng) < fc.stall_rate) faults.stall_after = fc.stall_after;
  faults.latency_ms = fc.added_latency_ms;
  return faults;
}

void apply_fault_header(RequestFaults& faults, std::string_view header) {
  while (!header.empty()) {
    auto comma = header.find(',');
    std::string_view item = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    auto eq = item.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = item.substr(0, eq);
    double v = std::strtod(std::string(item.substr(eq + 1)).c_str(), nullptr);
    if (key == "error")
      faults.error_status = static_cast<int>(v);
    else if (key == "close-after")
      faults.close_after = static_cast<std::int64_t>(v);
    else if (key == "stall-after")
      faults.stall_after = static_cast<std::int64_t>(v);
    else if (key == "latency-ms")
      faults.latency_ms = v;
  }
}

void malform_frame(std::string& out, std::size_t start, Malformed kind) {
  if (kind == Malformed::none || start >= out.size()) return;
  std::string_view ev(out);
  ev.remove_prefix(start);
  if (!ev.ends_with("\n\n")) return;
  if (kind == Malformed::sse) {
    out.pop_back();  // the blank line
    out += kGarbageLine;
    return;
  }
  std::size_t data = ev.starts_with("data: ") ? 0 : ev.find("\ndata: ");
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
