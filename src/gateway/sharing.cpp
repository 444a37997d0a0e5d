// SPDX-License-Identifier: Apache-2.0
#include "gateway/sharing.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/tokenizer.hpp"

namespace llmux::gateway {

namespace {

/// A header value that names a tenant or a class: letters, digits, '-', '_', '.', '@'; 1-128.
bool plain_name(std::string_view text) {
  return !text.empty() && text.size() <= 128 &&
         std::all_of(text.begin(), text.end(), [](char character) {
           return (character >= 'a' && character <= 'z') ||
                  (character >= 'A' && character <= 'Z') ||
                  (character >= '0' && character <= '9') || character == '-' || character == '_' ||
                  character == '.' || character == '@';
         });
}

std::string class_list(const config::Priorities& priorities) {
  std::string out;
  for (const auto& rule : priorities.classes) {
    if (!out.empty()) out += ", ";
    out += rule.name;
  }
  return out;
}

}  // namespace

Classification classify(const Fleet& fleet, const Request& req, const auth::KeyEntry* key,
                        AccessRecord& rec) {
  const config::Priorities& priorities = fleet.cfg.priorities;
  Classification result;
  // Whom it is for.
  const std::string& tenant_header = fleet.cfg.tenants.header;
  if (key) {
    rec.tenant = key->name;
    rec.tenant_is_key = true;
  } else if (const std::size_t count = req.count(tenant_header); count > 0) {
    const std::string_view tenant = req[tenant_header];
    if (count > 1 || !plain_name(tenant)) {
      result.status = 400;
      result.message = fmt::format(
          "Malformed {} header: expected one tenant name of letters, digits, '-', '_', '.' or "
          "'@' (at most 128).",
          tenant_header);
      return result;
    }
    rec.tenant = tenant;
  } else {
    rec.tenant = "anonymous";
  }
  // Its class.
  int asked = -1;
  const std::string& priority_header = priorities.header;
  if (const std::size_t count = req.count(priority_header); count > 0) {
    const std::string_view name = req[priority_header];
    if (count > 1 || !plain_name(name)) {
      result.status = 400;
      result.message = fmt::format("Malformed {} header: expected one of the priority classes: {}.",
                                   priority_header, class_list(priorities));
      return result;
    }
    asked = priorities.index_of(name);
    if (asked < 0) {
      result.status = 400;
      result.message = fmt::format("Unknown priority class '{}' in {}: the classes are {}.", name,
                                   priority_header, class_list(priorities));
      return result;
    }
  } else if (key && !key->priority.empty()) {
    asked = priorities.index_of(key->priority);
  }
  if (asked < 0) asked = std::max(0, priorities.index_of(priorities.default_class));
  // The key's cap.
  if (key && !key->max_priority.empty()) {
    const int cap = priorities.index_of(key->max_priority);
    if (cap > asked) {
      const std::string_view asked_name = priorities.classes[static_cast<std::size_t>(asked)].name;
      if (priorities.refuse_above_key_cap) {
        result.status = 403;
        result.message = fmt::format(
            "Priority class '{}' is above what this API key may ask for (at most '{}').",
            asked_name, key->max_priority);
        rec.priority = static_cast<std::int8_t>(asked);
        return result;
      }
      result.capped_from = asked_name;
      asked = cap;
    }
  }
  rec.priority = static_cast<std::int8_t>(asked);
  return result;
}

std::string_view priority_name(const Fleet& fleet, const AccessRecord& rec) {
  const auto& classes = fleet.cfg.priorities.classes;
  if (rec.priority < 0 || rec.priority >= static_cast<int>(classes.size())) return {};
  return classes[static_cast<std::size_t>(rec.priority)].name;
}

upstream::ClassCap class_cap(const Fleet& fleet, int priority_class) {
  const auto& classes = fleet.cfg.priorities.classes;
  if (priority_class < 0 || priority_class >= static_cast<int>(classes.size())) return {};
  return {classes[static_cast<std::size_t>(priority_class)].max_share, priority_class};
}

double estimate_cost(const std::string& body, const BodyFields& fields, double learned_output) {
  std::string prompt;
  read_prompt_text(body, prompt);
  const double prompt_tokens = static_cast<double>(Tokenizer::count(prompt));
  const double output_tokens =
      fields.max_tokens >= 0 ? static_cast<double>(fields.max_tokens) : learned_output;
  return std::max(1.0, prompt_tokens + 2 * output_tokens);
}

std::optional<double> real_cost(const AccessRecord& rec) {
  if (!rec.prompt_tokens && !rec.completion_tokens) return std::nullopt;
  return static_cast<double>(rec.prompt_tokens.value_or(0)) +
         2 * static_cast<double>(rec.completion_tokens.value_or(0));
}

void settle_queue_charge(const Fleet& fleet, const RouteRuntime& route, const AccessRecord& rec) {
  if (rec.queue_charge <= 0) return;
  const double estimated = rec.queue_charge;
  double actual = estimated;
  if (const auto cost = real_cost(rec))
    actual = *cost;
  else if (rec.backend.empty() || rec.status >= 500)
    actual = 0;  // no backend computed anything for it
  route.queue->settle(rec.tenant, fleet.cfg.tenants.weight(rec.tenant), estimated, actual,
                      rec.completion_tokens);
}

}  // namespace llmux::gateway
