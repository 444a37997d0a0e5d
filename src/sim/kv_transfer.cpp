// SPDX-License-Identifier: Apache-2.0
#include "sim/kv_transfer.hpp"

namespace llmux::sim {

std::optional<KvRole> parse_kv_role(std::string_view name) {
  if (name == "none") return KvRole::none;
  if (name == "producer") return KvRole::producer;
  if (name == "consumer") return KvRole::consumer;
  if (name == "both") return KvRole::both;
  return std::nullopt;
}

std::string_view to_string(KvRole role) {
  switch (role) {
    case KvRole::none:
      return "none";
    case KvRole::producer:
      return "producer";
    case KvRole::consumer:
      return "consumer";
    case KvRole::both:
      return "both";
  }
  return "none";
}

std::optional<LoadFailurePolicy> parse_load_failure_policy(std::string_view name) {
  if (name == "recompute") return LoadFailurePolicy::recompute;
  if (name == "fail") return LoadFailurePolicy::fail;
  return std::nullopt;
}

std::string_view to_string(LoadFailurePolicy policy) {
  return policy == LoadFailurePolicy::recompute ? "recompute" : "fail";
}

double KvLink::bytes(std::int64_t tokens) const {
  if (tokens <= 0) return 0.0;
  return bytes_per_token * static_cast<double>(tokens) + state_bytes;
}

double KvLink::seconds(std::int64_t tokens) const {
  const double rate = gbps * 1e9 * efficiency / 8.0;  // bytes per second
  if (tokens <= 0 || rate <= 0) return 0.0;
  return bytes(tokens) / rate;
}

}  // namespace llmux::sim
