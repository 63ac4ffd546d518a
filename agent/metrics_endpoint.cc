#include "agent/metrics_endpoint.h"

#include <CivetServer.h>

#include <exception>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "agent/openssl3_shim/shim.h"
#include "util/status_macros.h"

namespace roced::agent {
namespace {

// civetweb calls init_ssl from inside the Exposer's constructor with its
// own CivetServer as user data, so the TLS context reaches the callback
// through this slot, set only while one endpoint is being constructed.
std::mutex g_starting_mu;
TlsServerContext* g_starting = nullptr;  // guarded by g_starting_mu

// civetweb: 1 = the callback configured the SSL_CTX (certificates
// included), -1 = fail the start.
int InitSsl(void* ssl_ctx, void* /*civet_server*/) {
  if (g_starting == nullptr) return -1;
  return g_starting->Configure(static_cast<SSL_CTX*>(ssl_ctx)) ? 1 : -1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& civet_listen, const WebConfig& web) {
  std::unique_ptr<MetricsEndpoint> ep(new MetricsEndpoint());
  std::vector<std::string> options = {"listening_ports", civet_listen, "num_threads", "2"};
  CivetCallbacks callbacks;
  if (web.tls) {
    // civetweb looks OpenSSL up by the names these libraries carry; calling
    // them keeps them linked (agent/openssl3_shim/libssl_shim.c says why).
    if (roced_civetweb_libssl_shim() != 1 || roced_civetweb_libcrypto_shim() != 1) {
      return absl::InternalError("the OpenSSL 3 shim for civetweb is not loaded");
    }
    ASSIGN_OR_RETURN(ep->tls_, TlsServerContext::Create(*web.tls));
    ep->client_auth_ = web.tls->client_auth;
    options[1] += "s";  // civetweb: a port ending in 's' speaks TLS
    callbacks.init_ssl = &InitSsl;
  }
  try {
    std::lock_guard<std::mutex> lock(g_starting_mu);
    g_starting = ep->tls_.get();
    struct Reset {
      ~Reset() { g_starting = nullptr; }
    } reset;
    ep->exposer_ = std::make_unique<prometheus::Exposer>(options, &callbacks);
  } catch (const std::exception& e) {
    // civetweb reports a failed bind (and a refused TLS set-up) this way.
    return absl::UnavailableError(absl::StrCat("cannot listen on ", civet_listen, ": ", e.what()));
  }
  if (!web.basic_auth_users.empty()) {
    auto auth = std::make_shared<BasicAuth>(web.basic_auth_users);
    ep->auth_ = auth;
    ep->exposer_->RegisterAuth(
        [auth](const std::string& user, const std::string& password) {
          return auth->Check(user, password);
        },
        "roced", "/metrics");
  }
  return ep;
}

MetricsEndpoint::~MetricsEndpoint() { exposer_.reset(); }

void MetricsEndpoint::RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& c) {
  exposer_->RegisterCollectable(c);
}

std::vector<int> MetricsEndpoint::GetListeningPorts() const { return exposer_->GetListeningPorts(); }

std::string MetricsEndpoint::Describe() const {
  std::string out = tls_ ? "https" : "http";
  if (tls_ && client_auth_ != ClientAuth::kNoClientCert) {
    absl::StrAppend(&out, ", client certificates: ", ClientAuthName(client_auth_));
  }
  if (auth_) absl::StrAppend(&out, ", basic auth");
  return out;
}

}  // namespace roced::agent
