// The Prometheus endpoint (/metrics): a prometheus::Exposer (civetweb, 2
// worker threads) on one address, with the TLS and basic authentication of
// a web config (agent/web_config.h). Owned by the Server.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/basic_auth.h"
#include "agent/tls_server_context.h"
#include "agent/web_config.h"
#include "prometheus/collectable.h"
#include "prometheus/exposer.h"

namespace roced::agent {

class MetricsEndpoint {
 public:
  // Listens on `civet_listen` (civetweb's form: "+9471", "127.0.0.1:9471";
  // see CivetListenAddress) with `web`: HTTPS when web.tls is set (its files
  // loaded now: a missing or mismatched file is INVALID_ARGUMENT naming the
  // field and file), basic authentication in place before it returns, so
  // nothing registered afterwards is ever served without it. A failed bind
  // is UNAVAILABLE.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& civet_listen,
                                                                 const WebConfig& web);
  // Stops the listener and waits for requests in flight.
  ~MetricsEndpoint();

  void RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& collectable);
  std::vector<int> GetListeningPorts() const;
  // "http", "https", "https, basic auth", ... (health and log lines).
  std::string Describe() const;

 private:
  MetricsEndpoint() = default;

  std::shared_ptr<TlsServerContext> tls_;
  std::shared_ptr<BasicAuth> auth_;
  ClientAuth client_auth_ = ClientAuth::kNoClientCert;
  // Last: destroyed first, as its threads use tls_ and auth_.
  std::unique_ptr<prometheus::Exposer> exposer_;
};

}  // namespace roced::agent
