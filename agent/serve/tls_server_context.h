// The TLS side of the metrics endpoint: loads the key, certificate chain and
// client CA named by a TlsServerConfig, configures civetweb's SSL_CTX from
// them (through its init_ssl callback), and picks up renewed files without
// a restart.
//
// Reload: every TLS handshake runs OpenSSL's certificate callback, which
// stats the three files at most once per kReloadCheckInterval; when one's
// mtime, size or inode changed they are read again and the handshake and
// the ones after it use the new set. A set that fails to load (a
// certificate renewed before its key, say) is logged once and the previous
// one stays in use until the files change again.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "agent/serve/web_config.h"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace roced::agent {

inline constexpr std::chrono::seconds kReloadCheckInterval{2};

class TlsServerContext {
 public:
  // Loads the files; the error names the field and the file that failed.
  static absl::StatusOr<std::shared_ptr<TlsServerContext>> Create(const TlsServerConfig& config);
  ~TlsServerContext();

  // Configures `ctx` (versions, client verification, the callback that
  // hands each handshake the current files). The context must outlive
  // `ctx`. Returns false (and logs why) when OpenSSL refuses a setting.
  bool Configure(SSL_CTX* ctx);

  struct Material;  // the loaded files (opaque to callers)

 private:
  explicit TlsServerContext(TlsServerConfig config);
  // The set for a new handshake, reloading first when a file changed.
  std::shared_ptr<const Material> Current();
  static int OnCertificate(SSL* ssl, void* arg);

  const TlsServerConfig config_;
  std::mutex mu_;  // guards the three below; held while reloading
  std::shared_ptr<const Material> current_;
  std::chrono::steady_clock::time_point next_check_;
  std::string failed_stamp_;  // stamp of files that failed to load, logged once
};

}  // namespace roced::agent
