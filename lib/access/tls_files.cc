#include "access/tls_files.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "util/fs.h"

namespace roced::access {

namespace {

struct Free {
  void operator()(X509* x) const { X509_free(x); }
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  void operator()(BIO* b) const { BIO_free(b); }
  void operator()(GENERAL_NAMES* n) const { GENERAL_NAMES_free(n); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

std::string Where(const std::string& flag, const std::string& path) {
  return absl::StrCat(flag, " ", path, ": ");
}

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) return "not PEM";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

absl::StatusOr<Owned<BIO>> OpenPem(const std::string& flag, const std::string& path) {
  auto pem = ReadPem(path);
  if (!pem.ok()) return absl::Status(pem.status().code(), Where(flag, path) + std::string(pem.status().message()));
  // A memory BIO holding its own copy of the text.
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  if (!bio || BIO_write(bio.get(), pem->data(), static_cast<int>(pem->size())) != static_cast<int>(pem->size())) {
    return absl::ResourceExhaustedError(Where(flag, path) + "out of memory");
  }
  return bio;
}

absl::Time FromAsn1(const ASN1_TIME* t) {
  struct tm tm {};
  if (ASN1_TIME_to_tm(t, &tm) != 1) return absl::InfinitePast();
  return absl::FromTM(tm, absl::UTCTimeZone());
}

std::string Subject(X509* cert) {
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  return buf;
}

void AddSans(X509* cert, std::vector<std::string>* out) {
  Owned<GENERAL_NAMES> names(
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr)));
  if (!names) return;
  for (int i = 0; i < sk_GENERAL_NAME_num(names.get()); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(names.get(), i);
    if (n->type == GEN_DNS || n->type == GEN_URI) {
      const ASN1_IA5STRING* s = n->type == GEN_DNS ? n->d.dNSName : n->d.uniformResourceIdentifier;
      out->emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(s)),
                        static_cast<size_t>(ASN1_STRING_length(s)));
    }
  }
}

void AddCommonName(X509* cert, std::vector<std::string>* out) {
  char cn[256];
  int n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, cn, sizeof(cn));
  if (n > 0) out->emplace_back(cn, static_cast<size_t>(n));
}

std::string Format(absl::Time t) { return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", t, absl::UTCTimeZone()); }

}  // namespace

absl::StatusOr<std::string> ReadPem(const std::string& path) {
  return util::ReadRegularFile(path, kMaxPemBytes, "PEM file");
}

absl::StatusOr<CertificateInfo> CheckCertificate(const std::string& flag, const std::string& path,
                                                 absl::Time now) {
  auto bio = OpenPem(flag, path);
  if (!bio.ok()) return bio.status();
  Owned<X509> cert(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (!cert) return absl::InvalidArgumentError(Where(flag, path) + "no certificate: " + OpenSslError());
  CertificateInfo info;
  info.subject = Subject(cert.get());
  info.not_before = FromAsn1(X509_get0_notBefore(cert.get()));
  info.not_after = FromAsn1(X509_get0_notAfter(cert.get()));
  AddSans(cert.get(), &info.identities);
  AddCommonName(cert.get(), &info.identities);
  if (now > info.not_after) {
    return absl::FailedPreconditionError(
        absl::StrCat(Where(flag, path), "certificate ", info.subject, " expired on ", Format(info.not_after)));
  }
  if (now < info.not_before) {
    return absl::FailedPreconditionError(absl::StrCat(Where(flag, path), "certificate ", info.subject,
                                                      " is not valid before ", Format(info.not_before)));
  }
  return info;
}

absl::Status CheckKeyMatches(const std::string& flag, const std::string& key_path,
                             const std::string& cert_path) {
  auto key_bio = OpenPem(flag, key_path);
  if (!key_bio.ok()) return key_bio.status();
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(key_bio->get(), nullptr, nullptr, nullptr));
  if (!key) return absl::InvalidArgumentError(Where(flag, key_path) + "no private key: " + OpenSslError());
  auto cert_bio = OpenPem(flag, cert_path);
  if (!cert_bio.ok()) return cert_bio.status();
  Owned<X509> cert(PEM_read_bio_X509(cert_bio->get(), nullptr, nullptr, nullptr));
  if (!cert || X509_check_private_key(cert.get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat(Where(flag, key_path), "this key does not belong to the certificate in ", cert_path));
  }
  return absl::OkStatus();
}

absl::Status CheckCaBundle(const std::string& flag, const std::string& path) {
  auto bio = OpenPem(flag, path);
  if (!bio.ok()) return bio.status();
  Owned<X509> first(PEM_read_bio_X509(bio->get(), nullptr, nullptr, nullptr));
  if (!first) return absl::InvalidArgumentError(Where(flag, path) + "no CA certificate: " + OpenSslError());
  return absl::OkStatus();
}

absl::Status CheckTlsFiles(const TlsFiles& files, const TlsFlagNames& names, bool need_identity,
                           absl::Time now) {
  if (files.ca.empty()) return absl::InvalidArgumentError(names.ca + " is required with TLS");
  if (files.cert.empty() != files.key.empty() || (need_identity && files.cert.empty())) {
    return absl::InvalidArgumentError(absl::StrCat(names.cert, " and ", names.key, " are required together"));
  }
  if (absl::Status s = CheckCaBundle(names.ca, files.ca); !s.ok()) return s;
  if (files.cert.empty()) return absl::OkStatus();
  if (auto info = CheckCertificate(names.cert, files.cert, now); !info.ok()) return info.status();
  return CheckKeyMatches(names.key, files.key, files.cert);
}

}  // namespace roced::access
