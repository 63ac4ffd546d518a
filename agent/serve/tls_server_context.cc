#include "agent/serve/tls_server_context.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/stat.h>

#include <utility>

#include "absl/strings/str_cat.h"
#include "access/tls_files.h"
#include "util/log.h"
#include "util/status_macros.h"

namespace roced::agent {

struct TlsServerContext::Material {
  X509* cert = nullptr;
  STACK_OF(X509)* chain = nullptr;
  EVP_PKEY* key = nullptr;
  X509_STORE* ca_store = nullptr;             // client verification only
  STACK_OF(X509_NAME)* ca_names = nullptr;    // sent in the CertificateRequest
  std::string stamp;                          // the files as they were read

  ~Material() {
    X509_free(cert);
    sk_X509_pop_free(chain, X509_free);
    EVP_PKEY_free(key);
    X509_STORE_free(ca_store);
    sk_X509_NAME_pop_free(ca_names, X509_NAME_free);
  }
};

namespace {

using Material = TlsServerContext::Material;

// The newest queued OpenSSL error, and the queue cleared.
std::string OpenSslError() {
  unsigned long e = ERR_peek_last_error();
  char buf[256] = "no detail from OpenSSL";
  if (e != 0) ERR_error_string_n(e, buf, sizeof(buf));
  ERR_clear_error();
  return buf;
}

absl::Status FileError(absl::string_view field, const std::string& path, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("tls_server_config.", field, " ", path, ": ", what, " (", OpenSslError(), ")"));
}

// inode, size and mtime of each file: a renewal changes at least one.
std::string Stamp(const TlsServerConfig& c) {
  std::string out;
  for (const std::string* path : {&c.cert_file, &c.key_file, &c.client_ca_file}) {
    struct stat st {};
    if (path->empty() || ::stat(path->c_str(), &st) != 0) {
      absl::StrAppend(&out, "-;");
      continue;
    }
    absl::StrAppend(&out, st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".",
                    st.st_mtim.tv_nsec, ";");
  }
  return out;
}

// The file read whole into a memory BIO: opened once, a regular file, at
// most access::kMaxPemBytes. Reloads run on the handshake thread with mu_
// held, so a FIFO or /dev/zero swapped in at a renewal must be refused, not
// read forever (OpenSSL's own file BIOs would block or read without end).
absl::StatusOr<BIO*> ReadPemBio(absl::string_view field, const std::string& path) {
  absl::StatusOr<std::string> text = access::ReadPem(path);
  if (!text.ok()) {
    return absl::Status(text.status().code(), absl::StrCat("tls_server_config.", field, ": ", text.status().message()));
  }
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio != nullptr && BIO_write(bio, text->data(), static_cast<int>(text->size())) == static_cast<int>(text->size())) {
    return bio;
  }
  BIO_free(bio);
  return absl::ResourceExhaustedError(absl::StrCat("tls_server_config.", field, " ", path, ": out of memory"));
}

absl::Status LoadCertAndKey(const TlsServerConfig& c, Material* m) {
  ASSIGN_OR_RETURN(BIO * bio, ReadPemBio("cert_file", c.cert_file));
  m->cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
  m->chain = sk_X509_new_null();
  while (m->cert != nullptr) {
    X509* next = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr);
    if (next == nullptr) break;
    sk_X509_push(m->chain, next);
  }
  BIO_free(bio);
  if (m->cert == nullptr) return FileError("cert_file", c.cert_file, "holds no PEM certificate");
  ERR_clear_error();  // the end of the chain reads as "no start line"
  ASSIGN_OR_RETURN(bio, ReadPemBio("key_file", c.key_file));
  m->key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  if (m->key == nullptr) {
    return FileError("key_file", c.key_file, "holds no unencrypted PEM private key");
  }
  if (X509_check_private_key(m->cert, m->key) != 1) {
    return FileError("key_file", c.key_file,
                     absl::StrCat("is not the key of the certificate in cert_file ", c.cert_file));
  }
  return absl::OkStatus();
}

absl::Status LoadClientCa(const TlsServerConfig& c, Material* m) {
  if (c.client_ca_file.empty()) return absl::OkStatus();
  ASSIGN_OR_RETURN(BIO * bio, ReadPemBio("client_ca_file", c.client_ca_file));
  m->ca_store = X509_STORE_new();
  m->ca_names = sk_X509_NAME_new_null();
  int added = 0;
  while (X509* ca = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    if (X509_STORE_add_cert(m->ca_store, ca) == 1) ++added;
    X509_NAME* name = X509_NAME_dup(X509_get_subject_name(ca));
    if (name != nullptr) sk_X509_NAME_push(m->ca_names, name);
    X509_free(ca);
  }
  BIO_free(bio);
  if (added == 0) return FileError("client_ca_file", c.client_ca_file, "holds no PEM CA certificate");
  ERR_clear_error();  // the end of the bundle reads as "no start line"
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Material>> Load(const TlsServerConfig& c) {
  auto m = std::make_shared<Material>();
  m->stamp = Stamp(c);
  RETURN_IF_ERROR(LoadCertAndKey(c, m.get()));
  RETURN_IF_ERROR(LoadClientCa(c, m.get()));
  return std::shared_ptr<const Material>(std::move(m));
}

int ProtocolVersion(TlsVersion v) {
  switch (v) {
    case TlsVersion::kTls10: return TLS1_VERSION;
    case TlsVersion::kTls11: return TLS1_1_VERSION;
    case TlsVersion::kTls12: return TLS1_2_VERSION;
    case TlsVersion::kTls13: return TLS1_3_VERSION;
  }
  return TLS1_2_VERSION;
}

// RequestClientCert and RequireAnyClientCert take any certificate, as Go's
// crypto/tls does for them (node_exporter's meaning).
int AcceptAnyCertificate(int /*preverify_ok*/, X509_STORE_CTX* /*ctx*/) { return 1; }

void SetVerify(SSL_CTX* ctx, ClientAuth auth) {
  constexpr int kRequire = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
  switch (auth) {
    case ClientAuth::kNoClientCert: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr); return;
    case ClientAuth::kRequestClientCert:
      SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, AcceptAnyCertificate);
      return;
    case ClientAuth::kRequireAnyClientCert:
      SSL_CTX_set_verify(ctx, kRequire, AcceptAnyCertificate);
      return;
    case ClientAuth::kVerifyClientCertIfGiven: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr); return;
    case ClientAuth::kRequireAndVerifyClientCert: SSL_CTX_set_verify(ctx, kRequire, nullptr); return;
  }
}

}  // namespace

TlsServerContext::TlsServerContext(TlsServerConfig config) : config_(std::move(config)) {}
TlsServerContext::~TlsServerContext() = default;

absl::StatusOr<std::shared_ptr<TlsServerContext>> TlsServerContext::Create(
    const TlsServerConfig& config) {
  std::shared_ptr<TlsServerContext> ctx(new TlsServerContext(config));
  ASSIGN_OR_RETURN(ctx->current_, Load(config));
  ctx->next_check_ = std::chrono::steady_clock::now() + kReloadCheckInterval;
  return ctx;
}

bool TlsServerContext::Configure(SSL_CTX* ctx) {
  // civetweb set SSL_OP_NO_* from its own ssl_protocol_version; the range
  // is ours alone.
  SSL_CTX_clear_options(ctx, SSL_OP_NO_SSL_MASK);
  // OpenSSL 3 negotiates TLS 1.0 and 1.1 only at security level 0 (their
  // SHA-1 signatures); a file that asks for them gets them.
  if (config_.min_version < TlsVersion::kTls12) SSL_CTX_set_security_level(ctx, 0);
  static constexpr unsigned char kSessionContext[] = "roced-metrics";
  bool ok = SSL_CTX_set_min_proto_version(ctx, ProtocolVersion(config_.min_version)) == 1 &&
            SSL_CTX_set_max_proto_version(ctx, ProtocolVersion(config_.max_version)) == 1 &&
            // Resumed sessions with client verification need an id context.
            SSL_CTX_set_session_id_context(ctx, kSessionContext, sizeof(kSessionContext) - 1) == 1;
  std::shared_ptr<const Material> m = Current();
  ok = ok && SSL_CTX_use_cert_and_key(ctx, m->cert, m->key, m->chain, 1) == 1;
  if (ok && m->ca_store != nullptr) {
    ok = SSL_CTX_set1_verify_cert_store(ctx, m->ca_store) == 1;
    SSL_CTX_set_client_CA_list(ctx, SSL_dup_CA_list(m->ca_names));
  }
  if (!ok) {
    LOG_ERROR << "metrics endpoint: OpenSSL refused the TLS settings: " << OpenSslError();
    return false;
  }
  SetVerify(ctx, config_.client_auth);
  SSL_CTX_set_cert_cb(ctx, &TlsServerContext::OnCertificate, this);
  return true;
}

std::shared_ptr<const Material> TlsServerContext::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return current_;
  next_check_ = now + kReloadCheckInterval;
  const std::string stamp = Stamp(config_);
  if (stamp == current_->stamp || stamp == failed_stamp_) return current_;
  absl::StatusOr<std::shared_ptr<const Material>> fresh = Load(config_);
  if (!fresh.ok()) {
    failed_stamp_ = stamp;
    LOG_WARNING << "metrics endpoint: keeping the TLS files loaded before: "
                << fresh.status().message();
    return current_;
  }
  current_ = *std::move(fresh);
  LOG_INFO << "metrics endpoint: reloaded " << config_.cert_file << " and " << config_.key_file
           << (config_.client_ca_file.empty() ? "" : " and " + config_.client_ca_file);
  return current_;
}

int TlsServerContext::OnCertificate(SSL* ssl, void* arg) {
  std::shared_ptr<const Material> m = static_cast<TlsServerContext*>(arg)->Current();
  // The SSL takes its own references; `m` may be replaced meanwhile.
  if (SSL_use_cert_and_key(ssl, m->cert, m->key, m->chain, 1) != 1) return 0;
  if (m->ca_store != nullptr) {
    if (SSL_set1_verify_cert_store(ssl, m->ca_store) != 1) return 0;
    SSL_set_client_CA_list(ssl, SSL_dup_CA_list(m->ca_names));
  }
  return 1;
}

}  // namespace roced::agent
