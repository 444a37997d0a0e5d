// SPDX-License-Identifier: Apache-2.0
// Prefill/decode disaggregation (gateway/disaggregation.hpp): a backend's `role` and a route's
// `disaggregation`; loading (called from load.cpp) and validation (called from validate.cpp).
//
// Schema (docs/config.md, "disaggregation", is the user-facing version; keep them in step):
//
//   backends[]:
//     role: both                    # prefill | decode | both (vLLM kv_role kv_producer,
//                                   # kv_consumer, kv_both)
//   routes[]:
//     disaggregation:               # off unless given
//       mode: auto                  # always | auto | off
//       threshold_tokens: 8192      # auto: a prompt's uncached part above this goes to prefill
//       max_queued_prefill_tokens: 131072   # auto: not while the prefill side holds this many
#include <fmt/format.h>

#include "config/detail.hpp"
#include "config/yaml_reader.hpp"

namespace llmux::config {

std::string_view to_string(BackendRole role) {
  switch (role) {
    case BackendRole::both:
      return "both";
    case BackendRole::prefill:
      return "prefill";
    case BackendRole::decode:
      return "decode";
  }
  return "both";
}

namespace detail {

void load_backend_role(const YAML::Node& node, const std::string& field, BackendRole& out,
                       YamlReader& reader) {
  std::string text;
  reader.string(node, field, text);
  if (text == "both")
    out = BackendRole::both;
  else if (text == "prefill")
    out = BackendRole::prefill;
  else if (text == "decode")
    out = BackendRole::decode;
  else if (node.IsScalar())
    reader.error(field, node, text, "expected prefill, decode or both");
}

void load_disaggregation(const YAML::Node& node, const std::string& field, Disaggregation& out,
                         YamlReader& reader) {
  for (const auto& [key, value] :
       reader.entries(node, field, {"mode", "threshold_tokens", "max_queued_prefill_tokens"})) {
    const std::string child_field = child(field, key);
    if (key == "threshold_tokens") reader.integer(value, child_field, out.threshold_tokens);
    if (key == "max_queued_prefill_tokens")
      reader.integer(value, child_field, out.max_queued_prefill_tokens);
    if (key != "mode") continue;
    std::string mode;
    reader.string(value, child_field, mode);
    if (mode == "always")
      out.mode = Disaggregation::Mode::always;
    else if (mode == "auto")
      out.mode = Disaggregation::Mode::automatic;
    else if (mode == "off")
      out.mode = Disaggregation::Mode::off;
    else if (value.IsScalar())
      reader.error(child_field, value, mode, "expected always, auto or off");
  }
}

void validate_disaggregation(const GatewayConfig& cfg, std::vector<ConfigError>& errs) {
  auto role_of = [&](const std::string& name) {
    for (const Backend& backend : cfg.backends)
      if (backend.name == name) return backend.role;
    return BackendRole::both;  // (an unknown name is reported elsewhere)
  };
  std::vector<bool> prefill_used(cfg.backends.size(), false);
  for (std::size_t i = 0; i < cfg.routes.size(); ++i) {
    const Route& route = cfg.routes[i];
    const std::string field = fmt::format("routes[{}]", i);
    bool prefills = false, decodes = false;
    for (const std::string& name : route.backends) {
      const BackendRole role = role_of(name);
      prefills = prefills || role != BackendRole::decode;
      decodes = decodes || role != BackendRole::prefill;
    }
    if (!decodes && !route.backends.empty())  // (a route without backends is reported elsewhere)
      errs.push_back({field + ".backends", "",
                      fmt::format("route '{}' has only prefill backends: none of them can answer",
                                  route.name)});
    const Disaggregation& split = route.disaggregation;
    if (split.enabled()) {
      if (!prefills)
        errs.push_back({field + ".disaggregation", "",
                        "disaggregation needs a backend of role prefill or both on the route"});
      if (split.threshold_tokens < 0)
        errs.push_back({field + ".disaggregation.threshold_tokens",
                        std::to_string(split.threshold_tokens), "must be 0 or more"});
      if (split.max_queued_prefill_tokens <= 0)
        errs.push_back({field + ".disaggregation.max_queued_prefill_tokens",
                        std::to_string(split.max_queued_prefill_tokens), "must be more than 0"});
      for (std::size_t b = 0; b < cfg.backends.size(); ++b)
        if (std::find(route.backends.begin(), route.backends.end(), cfg.backends[b].name) !=
            route.backends.end())
          prefill_used[b] = true;
    }
  }
  for (std::size_t b = 0; b < cfg.backends.size(); ++b)
    if (cfg.backends[b].role == BackendRole::prefill && !prefill_used[b])
      errs.push_back({fmt::format("backends[{}].role", b), "prefill",
                      fmt::format("backend '{}' only prefills, but no route with "
                                  "disaggregation uses it",
                                  cfg.backends[b].name)});
}

}  // namespace detail
}  // namespace llmux::config
