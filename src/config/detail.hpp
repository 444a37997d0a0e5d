// SPDX-License-Identifier: Apache-2.0
#pragma once
// Internal to src/config: helpers shared between its files. Not part of the API (include
// config/config.hpp for that); nothing outside src/config includes this header.
//
// Where things live:
//   config.cpp    ConfigError::to_string(); load_and_validate(); reading files (*_file())
//   load.cpp      YAML text -> GatewayConfig (strict; the schema comment is there)
//   quick.cpp     quick_config(): the `--backend NAME=URL` form
//   validate.cpp  validate(): every error at once, derived fields filled
//   address.cpp   listen strings ("[::1]:8080") and backend URLs
//   units.cpp     parse_duration(), parse_size(), format_millis()
//   text.cpp      string helpers: join, case, "did you mean", field paths
//   yaml_guard.cpp  parser_would_loop(): yaml-cpp 0.7's endless loop, caught before loading
//   yaml_reader.hpp YamlReader: typed, strict reading of YAML nodes (load.cpp, auth.cpp)
//   auth.cpp      `auth` and `quotas`: loading, the keys file, validation; hash_key()
//   sharing.cpp   `tenants` and `priorities`: loading, validation
//   hedge.cpp     a route's `hedge`: loading
//   disaggregation.cpp   backends' `role`, routes' `disaggregation`: loading, validation
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.hpp"

namespace YAML {
class Node;
}

namespace llmux::config::detail {

class YamlReader;

// --- text.cpp

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ");
std::string lower(std::string_view text);
std::string upper(std::string_view text);

/// The closest of `known` to `word` if it is a near miss (edit distance <= 2, ignoring case, or
/// one is a prefix of the other and the shorter has at least 4 characters); "" otherwise.
std::string suggest(std::string_view word, const std::vector<std::string>& known);

/// The field path of element `position` of `field`: "routes" and 2 give "routes[2]".
std::string index(const std::string& field, std::size_t position);

// --- units.cpp

/// A non-negative decimal integer, the whole of `text` (no sign, no spaces); false on overflow.
bool parse_uint(std::string_view text, std::uint64_t& out);

/// "250ms": how errors show a duration.
std::string format_millis(Millis ms);

// --- address.cpp

/// Parses ":8080", "8080", "127.0.0.1:8080", "[::1]:8080"; on failure sets `why` and returns
/// nullopt. The address is not checked here (validate() does that).
std::optional<Listener> parse_listen_string(std::string_view text, std::string& why);

bool is_ip(std::string_view address);             // an IPv4 or IPv6 address, written as such
bool is_wildcard(std::string_view address);       // 0.0.0.0 or an unspecified IPv6 address (::)
std::string host_port(const Listener& listener);  // "127.0.0.1:8080", "[::1]:8080"

/// Fills backend's scheme/host/port/base_path from backend.url (clearing them first); each
/// problem with the URL is appended to `errs` under `field`.
void parse_backend_url(Backend& backend, const std::string& field, std::vector<ConfigError>& errs);

// --- yaml_guard.cpp

/// True when yaml-cpp 0.7 would loop forever in LoadAll() on `text` (yaml-cpp#1040); throws
/// YAML::Exception on a syntax error.
bool parser_would_loop(const std::string& text);

// --- auth.cpp

void load_auth(const YAML::Node& node, Auth& out, YamlReader& reader);
void load_quotas(const YAML::Node& node, Quotas& out, YamlReader& reader);
/// Reads `auth.keys_file` into auth.file_keys and checks auth and quotas (called by validate()
/// after the routes got their names).
void validate_auth(GatewayConfig& cfg, std::vector<ConfigError>& errs);

// --- sharing.cpp

/// Letters, digits, '-', '_', '.', '@'; 1-128 of them (tenant and class names).
bool valid_tenant_name(std::string_view name);
void load_tenants(const YAML::Node& node, Tenants& out, YamlReader& reader);
void load_priorities(const YAML::Node& node, Priorities& out, YamlReader& reader);
/// Checks tenants, priorities and the keys' classes (after validate_auth read the keys file).
void validate_sharing(GatewayConfig& cfg, std::vector<ConfigError>& errs);

// --- hedge.cpp

/// A route's `hedge: {after: 300ms | 2x}`.
void load_hedge(const YAML::Node& node, const std::string& field, Hedge& hedge, YamlReader& reader);

// --- disaggregation.cpp

void load_backend_role(const YAML::Node& node, const std::string& field, BackendRole& out,
                       YamlReader& reader);
void load_disaggregation(const YAML::Node& node, const std::string& field, Disaggregation& out,
                         YamlReader& reader);
/// Each route can answer (a backend that is not prefill-only); a disaggregated route has a
/// backend that can prefill; a prefill-only backend is on such a route.
void validate_disaggregation(const GatewayConfig& cfg, std::vector<ConfigError>& errs);

}  // namespace llmux::config::detail
