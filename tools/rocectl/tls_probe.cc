#include "tools/rocectl/tls_probe.h"

#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace roced::ctl {

namespace {

struct SslFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
  void operator()(SSL* s) const { SSL_free(s); }
};

// A connected TCP socket to host:port within `timeout`, or -1.
int Connect(const std::string& host, const std::string& port, absl::Duration timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    timeval tv = absl::ToTimeval(timeout);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (::connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
  }
  freeaddrinfo(found);
  return fd;
}

// "certificate expired" from the TLS alert OpenSSL recorded, if any.
std::string AlertFromError() {
  unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "";
  const char* reason = ERR_reason_error_string(e);
  return reason != nullptr ? reason : "";
}

std::unique_ptr<SSL_CTX, SslFree> MakeContext(const access::TlsFiles& files) {
  std::unique_ptr<SSL_CTX, SslFree> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return ctx;
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_load_verify_locations(ctx.get(), files.ca.c_str(), nullptr);
  if (!files.cert.empty()) {
    SSL_CTX_use_certificate_chain_file(ctx.get(), files.cert.c_str());
    SSL_CTX_use_PrivateKey_file(ctx.get(), files.key.c_str(), SSL_FILETYPE_PEM);
  }
  // Verification is judged below, so the handshake goes on to show what
  // the agent thinks of our certificate too.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  static const unsigned char kAlpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx.get(), kAlpn, sizeof(kAlpn));
  return ctx;
}

// What is wrong with the agent's certificate, or "".
std::string JudgeServer(SSL* ssl, const std::string& name, const access::TlsFiles& files) {
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return "the agent sent no certificate";
  long verify = SSL_get_verify_result(ssl);
  if (verify != X509_V_OK) {
    return absl::StrCat("the agent's certificate is not trusted by --ca ", files.ca, ": ",
                        X509_verify_cert_error_string(verify));
  }
  const bool ip = X509_check_ip_asc(cert, name.c_str(), 0) == 1;
  if (!ip && X509_check_host(cert, name.data(), name.size(), 0, nullptr) != 1) {
    return absl::StrCat("the agent's certificate does not name ", name,
                        " (no matching DNS or IP subject alternative name; --server-name sets the name to check)");
  }
  return "";
}

}  // namespace

std::string ExplainTlsFailure(const std::string& host_port, const access::TlsFiles& files,
                              const std::string& server_name, absl::Duration timeout) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return "";
  std::string host = host_port.substr(0, colon);
  host = std::string(absl::StripSuffix(absl::StripPrefix(host, "["), "]"));
  const std::string name = server_name.empty() ? host : server_name;
  int fd = Connect(host, host_port.substr(colon + 1), timeout);
  if (fd < 0) return "";  // not a TLS problem: gRPC's own message says more
  auto ctx = MakeContext(files);
  std::unique_ptr<SSL, SslFree> ssl(ctx ? SSL_new(ctx.get()) : nullptr);
  if (!ssl) {
    ::close(fd);
    return "";
  }
  SSL_set_fd(ssl.get(), fd);
  SSL_set_tlsext_host_name(ssl.get(), name.c_str());
  std::string why;
  if (SSL_connect(ssl.get()) != 1) {
    why = absl::StrCat("TLS handshake with the agent failed: ", AlertFromError());
  } else if (why = JudgeServer(ssl.get(), name, files); why.empty()) {
    // Under TLS 1.3 the agent judges our certificate after our side of the
    // handshake is done: a refusal arrives as an alert on the first read.
    char byte;
    if (SSL_read(ssl.get(), &byte, 1) <= 0 && SSL_get_error(ssl.get(), 0) == SSL_ERROR_SSL) {
      std::string alert = AlertFromError();
      if (alert.empty() || alert == "unexpected eof while reading") alert = "it closed the connection";
      why = absl::StrCat("the agent refused this client's certificate (", alert,
                         "): is --cert signed by the CA the agent trusts (its --tls-client-ca), and valid?");
    }
  }
  ::close(fd);
  return why;
}

}  // namespace roced::ctl
