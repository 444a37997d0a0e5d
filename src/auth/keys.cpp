// SPDX-License-Identifier: Apache-2.0
#include "auth/keys.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstring>

#include "core/openai_error.hpp"

namespace llmux::auth {
namespace {

bool is_space(char character) {
  return character == ' ' || character == '\t';
}

std::uint64_t prefix(const Digest& hash) {
  std::uint64_t value = 0;
  std::memcpy(&value, hash.data(), sizeof value);
  return value;
}

int hex_value(char digit) {
  if (digit >= '0' && digit <= '9') return digit - '0';
  if (digit >= 'a' && digit <= 'f') return digit - 'a' + 10;
  if (digit >= 'A' && digit <= 'F') return digit - 'A' + 10;
  return -1;
}

/// 64 hex digits -> digest; false when malformed (validate() rejects those already).
bool from_hex(std::string_view hex, Digest& out) {
  if (hex.size() != 64) return false;
  for (std::size_t i = 0; i < 32; ++i) {
    const int high = hex_value(hex[2 * i]), low = hex_value(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<unsigned char>(high * 16 + low);
  }
  return true;
}

std::string list(const std::vector<std::string>& items) {
  return fmt::format("{}", fmt::join(items, ", "));
}

Decision forbidden(const std::string& message, std::optional<std::string_view> param) {
  return {403, openai_error_json(403, message, "invalid_request_error", param, "permission_denied"),
          message, 0};
}

}  // namespace

std::optional<std::string_view> bearer_token(std::string_view authorization) {
  while (!authorization.empty() && is_space(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && is_space(authorization.back())) authorization.remove_suffix(1);
  constexpr std::string_view kScheme = "bearer";
  if (authorization.size() <= kScheme.size() || !is_space(authorization[kScheme.size()]))
    return std::nullopt;
  for (std::size_t i = 0; i < kScheme.size(); ++i)
    if ((authorization[i] | 0x20) != kScheme[i]) return std::nullopt;
  authorization.remove_prefix(kScheme.size());
  while (!authorization.empty() && is_space(authorization.front())) authorization.remove_prefix(1);
  if (authorization.empty()) return std::nullopt;
  return authorization;
}

Digest digest(std::string_view key) {
  Digest hash{};
  unsigned int len = 0;
  EVP_Digest(key.data(), key.size(), hash.data(), &len, EVP_sha256(), nullptr);
  return hash;
}

KeyTable::KeyTable(const config::Auth& auth) : enabled_(auth.enabled()) {
  auto add = [&](const config::ApiKey& key) {
    KeyEntry entry{key.name,   {},           key.models,      key.routes,
                   key.limits, key.priority, key.max_priority};
    if (!from_hex(key.sha256, entry.sha256)) return;  // not validated: such a key can never match
    entries_.push_back(std::move(entry));
  };
  for (const auto& key : auth.keys) add(key);
  for (const auto& key : auth.file_keys) add(key);
  for (std::size_t i = 0; i < entries_.size(); ++i)
    by_prefix_.emplace(prefix(entries_[i].sha256), i);
}

std::optional<std::string_view> presented_key(std::string_view authorization,
                                              std::string_view api_key) {
  if (auto token = bearer_token(authorization)) return token;
  while (!api_key.empty() && is_space(api_key.front())) api_key.remove_prefix(1);
  while (!api_key.empty() && is_space(api_key.back())) api_key.remove_suffix(1);
  if (api_key.empty()) return std::nullopt;
  return api_key;
}

const KeyEntry* KeyTable::find(std::string_view authorization, std::string_view api_key) const {
  const auto token = presented_key(authorization, api_key);
  if (!token) return nullptr;
  const Digest hash = digest(*token);
  const auto [first, last] = by_prefix_.equal_range(prefix(hash));
  for (auto it = first; it != last; ++it) {
    const KeyEntry& entry = entries_[it->second];
    if (CRYPTO_memcmp(entry.sha256.data(), hash.data(), hash.size()) == 0) return &entry;
  }
  return nullptr;
}

Decision KeyTable::missing_key() {
  constexpr std::string_view kMessage =
      "You didn't provide an API key. You need to provide your API key in an Authorization "
      "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY) or in an x-api-key header.";
  return {
      401,
      openai_error_json(401, kMessage, "invalid_request_error", std::nullopt, "invalid_api_key"),
      std::string(kMessage), 0};
}

Decision KeyTable::invalid_key() {
  constexpr std::string_view kMessage = "Incorrect API key provided.";
  return {
      401,
      openai_error_json(401, kMessage, "invalid_request_error", std::nullopt, "invalid_api_key"),
      std::string(kMessage), 0};
}

Decision KeyTable::check(const KeyEntry* key, std::string_view route,
                         std::optional<std::string_view> model) const {
  if (key == nullptr) return invalid_key();
  if (!key->routes.empty() &&
      std::find(key->routes.begin(), key->routes.end(), route) == key->routes.end())
    return forbidden(fmt::format("The API key '{}' may not use this endpoint (route '{}'); it may "
                                 "use the routes: {}.",
                                 key->name, route, list(key->routes)),
                     std::nullopt);
  if (model && !key->models.empty() &&
      std::find(key->models.begin(), key->models.end(), *model) == key->models.end()) {
    if (model->empty())
      return forbidden(fmt::format("The API key '{}' may only use the models: {}; the request "
                                   "names none.",
                                   key->name, list(key->models)),
                       "model");
    return forbidden(fmt::format("The API key '{}' may not use the model '{}'; it may use: {}.",
                                 key->name, *model, list(key->models)),
                     "model");
  }
  return {};
}

KeyTable::Result KeyTable::authorize(std::string_view authorization, std::string_view route,
                                     std::optional<std::string_view> model,
                                     std::string_view api_key) const {
  if (!enabled_) return {};
  const KeyEntry* key = find(authorization, api_key);
  if (key == nullptr)
    return {nullptr, presented_key(authorization, api_key) ? invalid_key() : missing_key()};
  return {key, check(key, route, model)};
}

}  // namespace llmux::auth
