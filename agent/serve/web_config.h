// The web config file (--web.config.file): TLS and basic authentication
// for the Prometheus endpoint, in the format node_exporter and the other
// Prometheus exporters read (the exporter-toolkit "web configuration"):
//
//   tls_server_config:
//     cert_file: server.crt           # PEM: the certificate, then its chain
//     key_file: server.key            # PEM private key
//     client_auth_type: RequireAndVerifyClientCert
//     client_ca_file: ca.crt
//     min_version: TLS12
//     max_version: TLS13
//   basic_auth_users:
//     alice: $2y$10$...               # bcrypt hashes (htpasswd -nbBC 10)
//
// Parsing is pure: no file named inside is opened here (metrics_endpoint
// loads them). Every error names the field and the values allowed; a key
// roced does not know, or a node_exporter option it cannot honour, is an
// error rather than ignored.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace roced::agent {

// A web config is a handful of lines; anything larger is not one.
inline constexpr std::size_t kMaxWebConfigBytes = 64 * 1024;
// Users in basic_auth_users.
inline constexpr std::size_t kMaxBasicAuthUsers = 1024;

// The names are node_exporter's (Go crypto/tls ClientAuthType).
enum class ClientAuth {
  kNoClientCert,                // no certificate asked for
  kRequestClientCert,           // asked for, not required, not verified
  kRequireAnyClientCert,        // required, not verified
  kVerifyClientCertIfGiven,     // not required; verified against the CA if sent
  kRequireAndVerifyClientCert,  // required and verified against the CA
};

enum class TlsVersion { kTls10, kTls11, kTls12, kTls13 };

struct TlsServerConfig {
  // Absolute paths (relative ones in the file are resolved against the web
  // config file's directory).
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // set exactly when client_auth verifies
  ClientAuth client_auth = ClientAuth::kNoClientCert;
  TlsVersion min_version = TlsVersion::kTls12;
  TlsVersion max_version = TlsVersion::kTls13;
};

struct WebConfig {
  // Absent: plain HTTP.
  std::optional<TlsServerConfig> tls;
  // User -> bcrypt hash ($2a$, $2b$ or $2y$). Empty: no authentication.
  std::map<std::string, std::string> basic_auth_users;
};

// Parses the file's text. `base_dir` resolves relative paths. Errors are
// INVALID_ARGUMENT naming the line, the field and the allowed values.
absl::StatusOr<WebConfig> ParseWebConfig(absl::string_view text, const std::string& base_dir);

// Reads `path` (at most kMaxWebConfigBytes, refused before reading) and
// parses it with its directory as base. Errors name the path.
absl::StatusOr<WebConfig> LoadWebConfig(const std::string& path);

// "TLS12" etc., and the enum names as written in the file.
absl::string_view TlsVersionName(TlsVersion v);
absl::string_view ClientAuthName(ClientAuth a);

// Whether `hash` is a bcrypt hash crypt(3) verifies: $2a$, $2b$ or $2y$,
// a two-digit cost 04-31, '$', 53 characters of [./A-Za-z0-9].
bool IsBcryptHash(absl::string_view hash);

}  // namespace roced::agent
