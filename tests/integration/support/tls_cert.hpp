// SPDX-License-Identifier: Apache-2.0
#pragma once
// Self-signed certificates made by the tests themselves (OpenSSL's API; nothing is committed):
// a P-256 key and a certificate for localhost and 127.0.0.1, valid from an hour ago for a day,
// written as PEM files into a test's own directory.
//
// Thread safety: none needed; each call makes its own objects.
#include <string>

#include "support/test_util.hpp"

namespace llmux::test {

struct TestCert {
  std::string cert;  // PEM certificate path (also usable as a CA file: it is its own issuer)
  std::string key;   // PEM private key path
};

/// Writes `name`.crt and `name`.key into `dir`; throws std::runtime_error when OpenSSL fails.
TestCert make_self_signed_cert(const TempDir& dir, const std::string& name);

}  // namespace llmux::test
