// SPDX-License-Identifier: Apache-2.0
#include "support/tls_cert.hpp"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <memory>
#include <stdexcept>

namespace llmux::test {

namespace {

template <typename T, void (*Free)(T*)>
struct Deleter {
  void operator()(T* p) const { Free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Deleter<EVP_PKEY, EVP_PKEY_free>>;
using Cert = std::unique_ptr<X509, Deleter<X509, X509_free>>;

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("making a test certificate: ") + what);
}

/// Adds extension `nid` with `value` (the openssl.cnf syntax) to `x`, issued by itself.
void add_extension(X509* x, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  check(ext != nullptr, "extension");
  X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
}

void write_pem(const std::string& path, bool key, EVP_PKEY* pkey, X509* x) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  check(f != nullptr, "cannot open the output file");
  const bool ok = key ? PEM_write_PrivateKey(f, pkey, nullptr, nullptr, 0, nullptr, nullptr) == 1
                      : PEM_write_X509(f, x) == 1;
  std::fclose(f);
  check(ok, "PEM write");
}

}  // namespace

TestCert make_self_signed_cert(const TempDir& dir, const std::string& name) {
  Key pkey(EVP_EC_gen("P-256"));
  check(pkey != nullptr, "key");
  Cert x(X509_new());
  check(x != nullptr, "X509_new");
  static long serial = 1;
  X509_set_version(x.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x.get()), serial++);
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 24 * 3600);
  X509_set_pubkey(x.get(), pkey.get());
  X509_NAME* subject = X509_get_subject_name(x.get());
  const std::string cn = "llmux test " + name;
  X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), subject);
  add_extension(x.get(), NID_basic_constraints, "critical,CA:TRUE");
  add_extension(x.get(), NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  check(X509_sign(x.get(), pkey.get(), EVP_sha256()) > 0, "sign");
  TestCert out{dir.path() + "/" + name + ".crt", dir.path() + "/" + name + ".key"};
  write_pem(out.cert, false, pkey.get(), x.get());
  write_pem(out.key, true, pkey.get(), x.get());
  return out;
}

}  // namespace llmux::test
