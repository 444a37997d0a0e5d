// SPDX-License-Identifier: Apache-2.0
#pragma once
// Client API keys (issue 15, part 3): who is calling, and may they use this route and model.
//
// A KeyTable is built once per config (load or reload) from config::Auth and is then immutable:
// any number of worker threads may call find()/check()/authorize() at once without locking. Swap
// the whole table on reload (e.g. a std::shared_ptr<const KeyTable> exchanged atomically); a
// KeyEntry pointer stays valid as long as its table lives.
//
// Only SHA-256 digests are kept: the key a client sends is hashed and looked up by its digest,
// and the final comparison of digests is constant-time (CRYPTO_memcmp). The plaintext is never
// stored, logged or echoed in an error.
//
// In the gateway's request path (gateway/admit.cpp, admit_client): after the route is matched and
// the body's "model" is known, and before anything is sent upstream:
//   auto [key, d] = keys.authorize(header("Authorization"), route.name, model,
//                                  header("x-api-key"));
//   if (!d.ok()) -> answer d.status with d.body (application/json; d.message in another dialect)
// then the quota admission (quota.hpp) for `key`. The client's Authorization and x-api-key headers
// are never forwarded: backends get their own configured api_key or none.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "auth/decision.hpp"
#include "config/config.hpp"

namespace llmux::auth {

using Digest = std::array<unsigned char, 32>;

struct KeyEntry {
  std::string name;                 // config name: usage, quotas and logs use it
  Digest sha256{};                  // the key's digest; the key itself is not kept
  std::vector<std::string> models;  // allowed models; empty: all
  std::vector<std::string> routes;  // allowed route names; empty: all
  config::KeyLimits limits;
  std::string priority;      // its requests' class when they name none ("": the default)
  std::string max_priority;  // the highest class it may ask for ("": any)
};

/// The key in an Authorization header value: "Bearer <key>" (scheme case-insensitive, spaces or
/// tabs around the key ignored); nullopt when the header is empty, another scheme, or has no key.
std::optional<std::string_view> bearer_token(std::string_view authorization);

/// The key a client presents: the Authorization header's bearer token, else the x-api-key
/// header's value (what Anthropic's clients send; spaces around it ignored); nullopt: none.
std::optional<std::string_view> presented_key(std::string_view authorization,
                                              std::string_view api_key);

/// The SHA-256 of `key`.
Digest digest(std::string_view key);

class KeyTable {
 public:
  KeyTable() = default;  // no keys: auth off
  /// From a validated config: auth.keys then auth.file_keys (validate() has rejected duplicate
  /// names and keys and malformed digests).
  explicit KeyTable(const config::Auth& auth);

  /// Whether auth is on (the config has `auth.keys` or `auth.keys_file`, even an empty one).
  bool enabled() const { return enabled_; }
  std::size_t size() const { return entries_.size(); }

  /// The entry for the key presented in `authorization` (an Authorization header value) or
  /// `api_key` (an x-api-key header value): presented_key(). nullptr when there is none or the
  /// key is unknown.
  const KeyEntry* find(std::string_view authorization, std::string_view api_key = {}) const;

  /// May `key` use route `route` and model `model`? nullptr: 401 (unknown key). `model`: the
  /// request body's "model" ("" when the body has none); nullopt for a request that names no
  /// model by its nature (GET /v1/responses/{id}), to which only the route restriction applies.
  /// A key limited to models may not send a body without a model (the backend would choose).
  Decision check(const KeyEntry* key, std::string_view route,
                 std::optional<std::string_view> model) const;

  struct Result {
    const KeyEntry* key = nullptr;  // set when the key is known, even if `decision` refuses
    Decision decision;
  };
  /// find() then check(), with the 401 for a missing key worded as such. With auth off: allowed,
  /// key nullptr.
  /// `api_key`: the x-api-key header's value (find()).
  Result authorize(std::string_view authorization, std::string_view route,
                   std::optional<std::string_view> model, std::string_view api_key = {}) const;

  /// The 401 answers (OpenAI's wording, type invalid_request_error, code invalid_api_key).
  static Decision missing_key();
  static Decision invalid_key();

 private:
  bool enabled_ = false;
  std::vector<KeyEntry> entries_;
  // First 8 bytes of the digest -> indices into entries_; the whole digest is then compared in
  // constant time.
  std::unordered_multimap<std::uint64_t, std::size_t> by_prefix_;
};

}  // namespace llmux::auth
