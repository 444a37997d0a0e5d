// SPDX-License-Identifier: Apache-2.0
// `auth` and `quotas`: loading (called from load.cpp), the keys file, validation (called from
// validate.cpp) and hash_key(). The gateway side is src/auth/.
//
// Schema (docs/config.md, "auth and quotas", is the user-facing version; keep them in step):
//
//   auth:
//     keys:                                    # inline keys; any key: every request needs one
//       - name: alice                          # required, unique; letters, digits, - _ . @
//         key: sk-alice-...                    # the key itself: hashed while loading, never
//                                              # kept, never shown in an error; or
//         sha256: 9f86d0...                    # its SHA-256 as 64 hex digits (not both)
//         models: [qwen3.6-35b-a3b-fp8]        # allowed models; empty/absent: all
//         routes: [responses, chat]            # allowed route names; empty/absent: all
//         limits: {requests_per_minute: 600, tokens_per_minute: 200000, concurrent: 8}
//                                              # 0/absent: no limit
//     keys_file: /etc/llmux/keys.yaml          # more keys: `keys: [...]` (or a bare list) of the
//                                              # same entries; read on every load and reload
//     usage_retention: 744h                    # usage ledger: hours kept (at least 1h)
//   quotas:
//     local_share: 0.5                         # (0, 1]: share of each limit a replica admits
//                                              # while the shared state is away; default
//                                              # 1/replicas
#include <fmt/format.h>
#include <openssl/evp.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <string_view>

#include "config/config.hpp"
#include "config/detail.hpp"
#include "config/yaml_reader.hpp"

namespace llmux::config {

std::string hash_key(std::string_view key) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), md, &len, EVP_sha256(), nullptr) != 1 || len != 32)
    return {};  // only when libcrypto itself is broken; "" never matches a valid sha256
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned int i = 0; i < 32; ++i) {
    out[2 * i] = kHex[md[i] >> 4];
    out[2 * i + 1] = kHex[md[i] & 15];
  }
  return out;
}

namespace detail {
namespace {

void load_limits(const YAML::Node& n, const std::string& field, KeyLimits& l, YamlReader& r) {
  for (const auto& [k, v] :
       r.entries(n, field, {"requests_per_minute", "tokens_per_minute", "concurrent"})) {
    const std::string f = child(field, k);
    if (k == "requests_per_minute") r.integer(v, f, l.requests_per_minute);
    if (k == "tokens_per_minute") r.integer(v, f, l.tokens_per_minute);
    if (k == "concurrent") r.integer(v, f, l.concurrent);
  }
}

void load_key(const YAML::Node& n, const std::string& field, ApiKey& key, YamlReader& r) {
  bool plain = false, hashed = false;
  for (const auto& [k, v] :
       r.entries(n, field, {"name", "key", "sha256", "models", "routes", "limits"})) {
    const std::string f = child(field, k);
    if (k == "name") r.string(v, f, key.name);
    if (k == "key") {
      plain = true;
      // Never r.string(): its errors would show the value; the key is never shown.
      if (!v.IsScalar()) {
        r.error(f, v, "(hidden)", fmt::format("expected a string, got {}", kind(v)));
        continue;
      }
      const std::string& text = v.Scalar();
      if (text.empty()) {
        r.error(f, v, "", "must not be empty");
      } else if (std::any_of(text.begin(), text.end(), [](char c) {
                   return static_cast<unsigned char>(c) <= ' ' || c == 127;
                 })) {
        r.error(f, v, "(hidden)", "must be printable characters without spaces");
      } else {
        key.sha256 = hash_key(text);
      }
    }
    if (k == "sha256") {
      hashed = true;
      r.string(v, f, key.sha256);
    }
    if (k == "models") r.strings(v, f, key.models);
    if (k == "routes") r.strings(v, f, key.routes);
    if (k == "limits") load_limits(v, f, key.limits, r);
  }
  if (plain && hashed) {
    key.sha256.clear();
    r.error(child(field, "sha256"), n, "", "set either key or sha256, not both");
  }
}

void load_keys(const YAML::Node& n, const std::string& field, std::vector<ApiKey>& out,
               YamlReader& r) {
  if (!n.IsSequence()) {
    r.type_error(field, n, "a list of keys");
    return;
  }
  for (std::size_t i = 0; i < n.size(); ++i) load_key(n[i], index(field, i), out.emplace_back(), r);
}

/// Reads `path` into `out`; errors go to `errs` under "auth.keys_file...".
void read_keys_file(const std::string& path, std::vector<ApiKey>& out,
                    std::vector<ConfigError>& errs) {
  const std::string field = "auth.keys_file";
  YAML::Node doc;
  try {
    doc = YAML::LoadFile(path);
  } catch (const YAML::BadFile&) {
    errs.push_back({field, path, "cannot be read"});
    return;
  } catch (const YAML::Exception& e) {
    ConfigError err{field, path, "YAML syntax error: " + e.msg};
    if (!e.mark.is_null()) {
      err.line = e.mark.line + 1;
      err.column = e.mark.column + 1;
    }
    errs.push_back(std::move(err));
    return;
  }
  YamlReader r(errs);
  if (!doc.IsDefined() || doc.IsNull()) return;  // an empty file: no keys (every key revoked)
  if (doc.IsSequence()) {
    load_keys(doc, field + ".keys", out, r);
    return;
  }
  for (const auto& [k, v] : r.entries(doc, field, {"keys"})) load_keys(v, field + ".keys", out, r);
}

bool valid_key_name(std::string_view s) {
  return !s.empty() && s.size() <= 128 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == '@';
  });
}

bool is_hex64(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return std::isxdigit(static_cast<unsigned char>(c)) != 0;
         });
}

}  // namespace

void load_auth(const YAML::Node& n, Auth& out, YamlReader& r) {
  const std::string field = "auth";
  for (const auto& [k, v] : r.entries(n, field, {"keys", "keys_file", "usage_retention"})) {
    const std::string f = child(field, k);
    if (k == "keys") load_keys(v, f, out.keys, r);
    if (k == "keys_file") r.string(v, f, out.keys_file);
    if (k == "usage_retention") r.duration(v, f, out.usage_retention);
  }
}

void load_quotas(const YAML::Node& n, Quotas& out, YamlReader& r) {
  for (const auto& [k, v] : r.entries(n, "quotas", {"local_share"})) {
    double share = 0;
    if (k == "local_share" && r.number(v, child("quotas", k), share)) out.local_share = share;
  }
}

void validate_auth(GatewayConfig& cfg, std::vector<ConfigError>& errs) {
  auto add = [&](std::string field, std::string value, std::string reason) {
    errs.push_back({std::move(field), std::move(value), std::move(reason)});
  };
  Auth& a = cfg.auth;
  a.file_keys.clear();
  if (!a.keys_file.empty()) read_keys_file(a.keys_file, a.file_keys, errs);

  std::vector<std::string> route_names;
  for (const Route& rt : cfg.routes) route_names.push_back(rt.name);
  std::map<std::string, std::string> names, hashes;  // -> the field that has it first
  auto check = [&](ApiKey& k, const std::string& f) {
    if (k.name.empty())
      add(f + ".name", "", "a key needs a name");
    else if (!valid_key_name(k.name))
      add(f + ".name", k.name,
          "names may only use letters, digits, '-', '_', '.' and '@' (at most 128)");
    else if (auto [it, fresh] = names.emplace(k.name, f); !fresh)
      add(f + ".name", k.name, fmt::format("duplicate key name (also {})", it->second));
    if (k.sha256.empty()) {
      add(f, k.name, "a key needs `key` (the key itself) or `sha256` (its SHA-256 in hex)");
    } else if (!is_hex64(k.sha256)) {
      add(f + ".sha256", k.sha256,
          "expected the key's SHA-256 as 64 hex digits (printf %s KEY | llmux keys hash)");
    } else {
      k.sha256 = lower(k.sha256);
      if (auto [it, fresh] = hashes.emplace(k.sha256, f); !fresh)
        add(f, k.name, fmt::format("the same key as {}", it->second));
    }
    for (std::size_t i = 0; i < k.models.size(); ++i)
      if (k.models[i].empty()) add(index(f + ".models", i), "", "an empty model name");
    for (std::size_t i = 0; i < k.routes.size(); ++i) {
      const std::string& rn = k.routes[i];
      if (std::find(route_names.begin(), route_names.end(), rn) != route_names.end()) continue;
      const std::string near = suggest(rn, route_names);
      add(index(f + ".routes", i), rn,
          near.empty() ? fmt::format("no route named '{}' (known: {})", rn, join(route_names))
                       : fmt::format("no route named '{}'; did you mean '{}'?", rn, near));
    }
    const std::pair<const char*, std::int64_t> limits[] = {
        {"requests_per_minute", k.limits.requests_per_minute},
        {"tokens_per_minute", k.limits.tokens_per_minute},
        {"concurrent", k.limits.concurrent}};
    for (const auto& [name, value] : limits)
      if (value < 0)
        add(fmt::format("{}.limits.{}", f, name), std::to_string(value),
            "must be 0 (no limit) or more");
  };
  for (std::size_t i = 0; i < a.keys.size(); ++i) check(a.keys[i], index("auth.keys", i));
  for (std::size_t i = 0; i < a.file_keys.size(); ++i)
    check(a.file_keys[i], index("auth.keys_file.keys", i));

  if (a.usage_retention < std::chrono::hours(1))
    add("auth.usage_retention", format_millis(a.usage_retention), "must be at least 1h");
  if (cfg.quotas.local_share && !(*cfg.quotas.local_share > 0 && *cfg.quotas.local_share <= 1))
    add("quotas.local_share", fmt::format("{}", *cfg.quotas.local_share),
        "must be more than 0 and at most 1 (a replica's share of each limit)");
}

}  // namespace detail
}  // namespace llmux::config
