// Certificate files checked before they are used, so a wrong path, an
// expired certificate or a key of another certificate is one clear line
// naming the flag and the file, not a TLS handshake failure later.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace roced::access {

// A certificate, its key and the CA bundle that verifies the other side.
struct TlsFiles {
  std::string cert;
  std::string key;
  std::string ca;
  bool any() const { return !cert.empty() || !key.empty() || !ca.empty(); }
};

struct CertificateInfo {
  std::string subject;                  // "CN=node1"
  std::vector<std::string> identities;  // SANs (DNS, URI, IP), then the CN
  absl::Time not_before;
  absl::Time not_after;
};

inline constexpr size_t kMaxPemBytes = 1 << 20;

// The first certificate of a PEM file: readable, parseable and valid at
// `now`. Errors start with "<flag> <path>: ".
absl::StatusOr<CertificateInfo> CheckCertificate(const std::string& flag, const std::string& path,
                                                 absl::Time now);
// A PEM private key that belongs to the certificate in `cert_path`.
absl::Status CheckKeyMatches(const std::string& flag, const std::string& key_path,
                             const std::string& cert_path);
// A PEM bundle with at least one certificate.
absl::Status CheckCaBundle(const std::string& flag, const std::string& path);

// The three together, with the flag names of the caller (roced's
// --tls-cert/--tls-key/--tls-client-ca, rocectl's --cert/--key/--ca).
// `need_identity`: cert and key are required (else optional, but both or
// neither).
struct TlsFlagNames {
  std::string cert, key, ca;
};
absl::Status CheckTlsFiles(const TlsFiles& files, const TlsFlagNames& names, bool need_identity,
                           absl::Time now);

// Reads a PEM file whole: opened once, a regular file (not a FIFO or
// /dev/zero), at most kMaxPemBytes (util::ReadRegularFile; errors name
// the file and the bound).
absl::StatusOr<std::string> ReadPem(const std::string& path);

}  // namespace roced::access
