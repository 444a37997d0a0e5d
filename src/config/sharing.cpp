// SPDX-License-Identifier: Apache-2.0
// `tenants` and `priorities`: how a team shares its machines (gateway/fair_queue.hpp); loading
// (called from load.cpp) and validation (called from validate.cpp).
//
// Schema (docs/config.md, "Sharing the machines", is the user-facing version; keep them in step):
//
//   tenants:
//     header: X-Llmux-Tenant        # names the tenant of a request without an API key
//     weights: {alice: 3, nightly: 1}   # shares of a route's queue by tokens; default 1
//     max_queued: 128               # places of each route's queue one tenant may hold (0: any)
//   priorities:
//     header: X-Llmux-Priority      # names a request's class
//     default: default              # the class of a request that names none
//     refuse_above_key_cap: false   # a class above its key's max_priority: served at the cap
//                                   # (true: 403)
//     classes:                      # highest first; these are the defaults
//       - {name: interactive, max_share: 1}
//       - {name: default, max_share: 0.75, promote_after: 15s}
//       - {name: batch, max_share: 0.5, promote_after: 30s}
//     # also vllm_priority: N per class (backends with send_priority; default: the distance
//     # from the default class)
//   auth.keys[]: {priority: batch, max_priority: default}   # a key's class and its cap
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <set>

#include "config/config.hpp"
#include "config/detail.hpp"
#include "config/yaml_reader.hpp"

namespace llmux::config::detail {

bool valid_tenant_name(std::string_view name) {
  return !name.empty() && name.size() <= 128 &&
         std::all_of(name.begin(), name.end(), [](char character) {
           return std::isalnum(static_cast<unsigned char>(character)) || character == '-' ||
                  character == '_' || character == '.' || character == '@';
         });
}

void load_tenants(const YAML::Node& node, Tenants& out, YamlReader& reader) {
  const std::string field = "tenants";
  for (const auto& [key, value] :
       reader.entries(node, field, {"header", "weights", "max_queued"})) {
    const std::string child_field = child(field, key);
    if (key == "header") reader.string(value, child_field, out.header);
    if (key == "max_queued") reader.integer(value, child_field, out.max_queued);
    if (key != "weights") continue;
    if (!value.IsMap()) {
      reader.type_error(child_field, value, "a mapping of tenant names to weights");
      continue;
    }
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string name = it->first.IsScalar() ? it->first.Scalar() : std::string();
      const std::string weight_field = child(child_field, name);
      if (!valid_tenant_name(name)) {
        reader.error(weight_field, it->first, name,
                     "tenant names use letters, digits, '-', '_', '.' and '@' (at most 128)");
        continue;
      }
      double weight = 0;
      if (!reader.number(it->second, weight_field, weight)) continue;
      if (!(weight > 0 && weight <= 1000)) {
        reader.error(weight_field, it->second, render(it->second),
                     "a weight is more than 0 and at most 1000");
        continue;
      }
      if (!out.weights.emplace(name, weight).second)
        reader.error(weight_field, it->first, name, "duplicate tenant");
    }
  }
}

void load_priorities(const YAML::Node& node, Priorities& out, YamlReader& reader) {
  const std::string field = "priorities";
  for (const auto& [key, value] :
       reader.entries(node, field, {"header", "default", "refuse_above_key_cap", "classes"})) {
    const std::string child_field = child(field, key);
    if (key == "header") reader.string(value, child_field, out.header);
    if (key == "default") reader.string(value, child_field, out.default_class);
    if (key == "refuse_above_key_cap") reader.boolean(value, child_field, out.refuse_above_key_cap);
    if (key != "classes") continue;
    if (!value.IsSequence()) {
      reader.type_error(child_field, value, "a list of classes, highest first");
      continue;
    }
    out.classes.clear();
    for (std::size_t i = 0; i < value.size(); ++i) {
      PriorityClass& rule = out.classes.emplace_back();
      const std::string class_field = index(child_field, i);
      for (const auto& [class_key, class_value] : reader.entries(
               value[i], class_field, {"name", "max_share", "promote_after", "vllm_priority"})) {
        const std::string entry_field = child(class_field, class_key);
        if (class_key == "name") reader.string(class_value, entry_field, rule.name);
        if (class_key == "max_share") reader.number(class_value, entry_field, rule.max_share);
        if (class_key == "promote_after")
          reader.duration(class_value, entry_field, rule.promote_after);
        int priority = 0;
        if (class_key == "vllm_priority" && reader.integer(class_value, entry_field, priority))
          rule.vllm_priority = priority;
      }
    }
  }
}

void validate_sharing(GatewayConfig& cfg, std::vector<ConfigError>& errs) {
  auto add = [&](std::string field, std::string value, std::string reason) {
    errs.push_back({std::move(field), std::move(value), std::move(reason)});
  };
  const auto valid_header = [](std::string_view name) {
    return !name.empty() && std::all_of(name.begin(), name.end(), [](char character) {
      return std::isalnum(static_cast<unsigned char>(character)) || character == '-' ||
             character == '_';
    });
  };
  if (!valid_header(cfg.tenants.header))
    add("tenants.header", cfg.tenants.header, "expected a header name (letters, digits, '-')");
  if (cfg.tenants.max_queued < 0)
    add("tenants.max_queued", std::to_string(cfg.tenants.max_queued),
        "must be 0 (no limit but queue.size) or more");

  Priorities& priorities = cfg.priorities;
  if (!valid_header(priorities.header))
    add("priorities.header", priorities.header, "expected a header name (letters, digits, '-')");
  if (priorities.classes.empty() || priorities.classes.size() > 8)
    add("priorities.classes", std::to_string(priorities.classes.size()),
        "between 1 and 8 classes, highest first");
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < priorities.classes.size(); ++i) {
    const PriorityClass& rule = priorities.classes[i];
    const std::string field = index("priorities.classes", i);
    if (!valid_tenant_name(rule.name))
      add(field + ".name", rule.name,
          "a class needs a name of letters, digits, '-', '_', '.' (at most 128)");
    else if (!seen.insert(rule.name).second)
      add(field + ".name", rule.name, "duplicate class");
    names.push_back(rule.name);
    if (!(rule.max_share > 0 && rule.max_share <= 1))
      add(field + ".max_share", fmt::format("{}", rule.max_share),
          "more than 0 and at most 1 (the share of a backend's max_inflight it may fill)");
    else if (i > 0 && rule.max_share > priorities.classes[i - 1].max_share)
      add(field + ".max_share", fmt::format("{}", rule.max_share),
          fmt::format("more than the class above ('{}': {}): a lower class may not fill more",
                      priorities.classes[i - 1].name, priorities.classes[i - 1].max_share));
    if (rule.promote_after.count() < 0)
      add(field + ".promote_after", format_millis(rule.promote_after), "must be 0 (never) or more");
    if (rule.vllm_priority && (*rule.vllm_priority < -1000000 || *rule.vllm_priority > 1000000))
      add(field + ".vllm_priority", std::to_string(*rule.vllm_priority),
          "between -1000000 and 1000000");
  }
  auto known_class = [&](const std::string& field, const std::string& name) {
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    const std::string near = suggest(name, names);
    add(field, name,
        near.empty() ? fmt::format("no priority class named '{}' (known: {})", name, join(names))
                     : fmt::format("no priority class named '{}'; did you mean '{}'?", name, near));
  };
  known_class("priorities.default", priorities.default_class);
  auto check_key = [&](const ApiKey& key, const std::string& field) {
    if (!key.priority.empty()) known_class(field + ".priority", key.priority);
    if (!key.max_priority.empty()) known_class(field + ".max_priority", key.max_priority);
  };
  for (std::size_t i = 0; i < cfg.auth.keys.size(); ++i)
    check_key(cfg.auth.keys[i], index("auth.keys", i));
  for (std::size_t i = 0; i < cfg.auth.file_keys.size(); ++i)
    check_key(cfg.auth.file_keys[i], index("auth.keys_file.keys", i));
}

}  // namespace llmux::config::detail
