// SPDX-License-Identifier: Apache-2.0
#include "gateway/priority_field.hpp"

#include <fmt/format.h>
#include <boost/json.hpp>

namespace llmux::gateway {

namespace {

std::string_view trim_left(std::string_view text) {
  const std::size_t start = text.find_first_not_of(" \t\r\n");
  return start == std::string_view::npos ? std::string_view() : text.substr(start);
}

}  // namespace

bool body_with_priority(const std::string& body, const UsageRequest& usage,
                        const BodyFields& fields, int priority, PriorityBody& out) {
  if (!fields.parsed) return false;
  if (fields.names_priority || !usage.owned.empty()) {
    // Rewritten whole: the client's own `priority` replaced (a duplicate key would leave which
    // one counts to the backend's parser).
    boost::system::error_code ec;
    boost::json::value parsed =
        boost::json::parse(usage.owned.empty() ? std::string_view(body) : usage.owned, ec);
    if (ec || !parsed.is_object()) return false;
    parsed.get_object()["priority"] = priority;
    out.owned = boost::json::serialize(parsed);
    out.prefix = out.owned;  // sent as it is
    out.first = out.second = {};
    return true;
  }
  // The body as usage sends it starts with '{' (after optional whitespace): the prefix takes
  // that brace's place.
  std::string_view first = usage.first(body);
  std::string_view second = usage.second(body);
  first = trim_left(first);
  if (first.empty() || first.front() != '{') return false;
  first.remove_prefix(1);
  // An empty object (`{}`) gets no comma after the field.
  const bool empty_object = trim_left(first).starts_with('}') ||
                            (trim_left(first).empty() && trim_left(second).starts_with('}'));
  out.prefix = fmt::format("{{\"priority\":{}{}", priority, empty_object ? "" : ",");
  out.first = first;
  out.second = second;
  return true;
}

}  // namespace llmux::gateway
