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
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(key.data(), key.size(), digest, &len, EVP_sha256(), nullptr) != 1 || len != 32)
    return {};  // only when libcrypto itself is broken; "" never matches a valid sha256
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (unsigned int i = 0; i < 32; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

namespace detail {
namespace {

void load_limits(const YAML::Node& node, const std::string& field, KeyLimits& limits,
                 YamlReader& reader) {
  for (const auto& [key, value] :
       reader.entries(node, field, {"requests_per_minute", "tokens_per_minute", "concurrent"})) {
    const std::string child_field = child(field, key);
    if (key == "requests_per_minute")
      reader.integer(value, child_field, limits.requests_per_minute);
    if (key == "tokens_per_minute") reader.integer(value, child_field, limits.tokens_per_minute);
    if (key == "concurrent") reader.integer(value, child_field, limits.concurrent);
  }
}

void load_key(const YAML::Node& node, const std::string& field, ApiKey& key, YamlReader& reader) {
  bool plain = false, hashed = false;
  for (const auto& [name, value] : reader.entries(
           node, field,
           {"name", "key", "sha256", "models", "routes", "limits", "priority", "max_priority"})) {
    const std::string child_field = child(field, name);
    if (name == "name") reader.string(value, child_field, key.name);
    if (name == "key") {
      plain = true;
      // Never reader.string(): its errors would show the value; the key is never shown.
      if (!value.IsScalar()) {
        reader.error(child_field, value, "(hidden)",
                     fmt::format("expected a string, got {}", kind(value)));
        continue;
      }
      const std::string& text = value.Scalar();
      if (text.empty()) {
        reader.error(child_field, value, "", "must not be empty");
      } else if (std::any_of(text.begin(), text.end(), [](char character) {
                   return static_cast<unsigned char>(character) <= ' ' || character == 127;
                 })) {
        reader.error(child_field, value, "(hidden)", "must be printable characters without spaces");
      } else {
        key.sha256 = hash_key(text);
      }
    }
    if (name == "sha256") {
      hashed = true;
      reader.string(value, child_field, key.sha256);
    }
    if (name == "models") reader.strings(value, child_field, key.models);
    if (name == "routes") reader.strings(value, child_field, key.routes);
    if (name == "limits") load_limits(value, child_field, key.limits, reader);
    if (name == "priority") reader.string(value, child_field, key.priority);  // sharing.cpp
    if (name == "max_priority") reader.string(value, child_field, key.max_priority);
  }
  if (plain && hashed) {
    key.sha256.clear();
    reader.error(child(field, "sha256"), node, "", "set either key or sha256, not both");
  }
}

void load_keys(const YAML::Node& node, const std::string& field, std::vector<ApiKey>& out,
               YamlReader& reader) {
  if (!node.IsSequence()) {
    reader.type_error(field, node, "a list of keys");
    return;
  }
  for (std::size_t i = 0; i < node.size(); ++i)
    load_key(node[i], index(field, i), out.emplace_back(), reader);
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
  } catch (const YAML::Exception& exception) {
    ConfigError err{field, path, "YAML syntax error: " + exception.msg};
    if (!exception.mark.is_null()) {
      err.line = exception.mark.line + 1;
      err.column = exception.mark.column + 1;
    }
    errs.push_back(std::move(err));
    return;
  }
  YamlReader reader(errs);
  if (!doc.IsDefined() || doc.IsNull()) return;  // an empty file: no keys (every key revoked)
  if (doc.IsSequence()) {
    load_keys(doc, field + ".keys", out, reader);
    return;
  }
  for (const auto& [key, value] : reader.entries(doc, field, {"keys"}))
    load_keys(value, field + ".keys", out, reader);
}

bool valid_key_name(std::string_view name) {
  return !name.empty() && name.size() <= 128 &&
         std::all_of(name.begin(), name.end(), [](char character) {
           return std::isalnum(static_cast<unsigned char>(character)) || character == '-' ||
                  character == '_' || character == '.' || character == '@';
         });
}

bool is_hex64(std::string_view text) {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char character) {
           return std::isxdigit(static_cast<unsigned char>(character)) != 0;
         });
}

}  // namespace

void load_auth(const YAML::Node& node, Auth& out, YamlReader& reader) {
  const std::string field = "auth";
  for (const auto& [key, value] :
       reader.entries(node, field, {"keys", "keys_file", "usage_retention"})) {
    const std::string child_field = child(field, key);
    if (key == "keys") load_keys(value, child_field, out.keys, reader);
    if (key == "keys_file") reader.string(value, child_field, out.keys_file);
    if (key == "usage_retention") reader.duration(value, child_field, out.usage_retention);
  }
}

void load_quotas(const YAML::Node& node, Quotas& out, YamlReader& reader) {
  for (const auto& [key, value] : reader.entries(node, "quotas", {"local_share"})) {
    double share = 0;
    if (key == "local_share" && reader.number(value, child("quotas", key), share))
      out.local_share = share;
  }
}

void validate_auth(GatewayConfig& cfg, std::vector<ConfigError>& errs) {
  auto add = [&](std::string field, std::string value, std::string reason) {
    errs.push_back({std::move(field), std::move(value), std::move(reason)});
  };
  Auth& auth = cfg.auth;
  auth.file_keys.clear();
  if (!auth.keys_file.empty()) read_keys_file(auth.keys_file, auth.file_keys, errs);

  std::vector<std::string> route_names;
  for (const Route& route : cfg.routes) route_names.push_back(route.name);
  std::map<std::string, std::string> names, hashes;  // -> the field that has it first
  auto check = [&](ApiKey& key, const std::string& field) {
    if (key.name.empty())
      add(field + ".name", "", "a key needs a name");
    else if (!valid_key_name(key.name))
      add(field + ".name", key.name,
          "names may only use letters, digits, '-', '_', '.' and '@' (at most 128)");
    else if (auto [it, fresh] = names.emplace(key.name, field); !fresh)
      add(field + ".name", key.name, fmt::format("duplicate key name (also {})", it->second));
    if (key.sha256.empty()) {
      add(field, key.name, "a key needs `key` (the key itself) or `sha256` (its SHA-256 in hex)");
    } else if (!is_hex64(key.sha256)) {
      add(field + ".sha256", key.sha256,
          "expected the key's SHA-256 as 64 hex digits (printf %s KEY | llmux keys hash)");
    } else {
      key.sha256 = lower(key.sha256);
      if (auto [it, fresh] = hashes.emplace(key.sha256, field); !fresh)
        add(field, key.name, fmt::format("the same key as {}", it->second));
    }
    for (std::size_t i = 0; i < key.models.size(); ++i)
      if (key.models[i].empty()) add(index(field + ".models", i), "", "an empty model name");
    for (std::size_t i = 0; i < key.routes.size(); ++i) {
      const std::string& route_name = key.routes[i];
      if (std::find(route_names.begin(), route_names.end(), route_name) != route_names.end())
        continue;
      const std::string near = suggest(route_name, route_names);
      add(index(field + ".routes", i), route_name,
          near.empty()
              ? fmt::format("no route named '{}' (known: {})", route_name, join(route_names))
              : fmt::format("no route named '{}'; did you mean '{}'?", route_name, near));
    }
    const std::pair<const char*, std::int64_t> limits[] = {
        {"requests_per_minute", key.limits.requests_per_minute},
        {"tokens_per_minute", key.limits.tokens_per_minute},
        {"concurrent", key.limits.concurrent}};
    for (const auto& [name, value] : limits)
      if (value < 0)
        add(fmt::format("{}.limits.{}", field, name), std::to_string(value),
            "must be 0 (no limit) or more");
  };
  for (std::size_t i = 0; i < auth.keys.size(); ++i) check(auth.keys[i], index("auth.keys", i));
  for (std::size_t i = 0; i < auth.file_keys.size(); ++i)
    check(auth.file_keys[i], index("auth.keys_file.keys", i));

  if (auth.usage_retention < std::chrono::hours(1))
    add("auth.usage_retention", format_millis(auth.usage_retention), "must be at least 1h");
  if (cfg.quotas.local_share && !(*cfg.quotas.local_share > 0 && *cfg.quotas.local_share <= 1))
    add("quotas.local_share", fmt::format("{}", *cfg.quotas.local_share),
        "must be more than 0 and at most 1 (a replica's share of each limit)");
}

}  // namespace detail
}  // namespace llmux::config
