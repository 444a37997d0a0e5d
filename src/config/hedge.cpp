// SPDX-License-Identifier: Apache-2.0
// A route's `hedge` (gateway/hedge.hpp): loading, called from load.cpp. validate.cpp checks it
// against the route and the timeouts.
//
//   hedge: {after: 300ms}   # a fixed wait, or
//   hedge: {after: 2x}      # times the route's learned time-to-first-token p99
#include "config/detail.hpp"
#include "config/yaml_reader.hpp"

namespace llmux::config::detail {

void load_hedge(const YAML::Node& node, const std::string& field, Hedge& hedge,
                YamlReader& reader) {
  for (const auto& [key, value] : reader.entries(node, field, {"after"})) {
    const std::string child_field = child(field, key);
    if (!value.IsScalar()) {
      reader.type_error(child_field, value, "a duration (300ms) or a multiple of the p99 (2x)");
      continue;
    }
    const std::string& text = value.Scalar();
    const std::optional<Millis> wait = parse_duration(text);
    if (const auto multiple = parse_multiple(text))
      hedge.after_p99 = *multiple;
    else if (text.ends_with('x') || text.ends_with('X'))
      reader.error(child_field, value, text, "expected a positive multiple such as 2x or 1.5x");
    else if (!wait)
      reader.duration(value, child_field, hedge.after);  // (reports the error)
    else if (wait->count() <= 0)
      reader.error(child_field, value, text,
                   "must be more than 0 (leave hedge out to turn it off)");
    else
      hedge.after = *wait;
  }
}

}  // namespace llmux::config::detail
