// The Prometheus endpoint (/metrics): civetweb (kMetricsWorkers worker
// threads, the bounds below) on one address, with the TLS and basic authentication of a web config
// (agent/serve/web_config.h), and a handler of our own in front of the
// Collectables (prometheus-cpp's interface): their families are written with
// metrics::Expose (numbers in their shortest form, one reserved buffer) and
// gzip-compressed at level 1 when the client accepts gzip, as Prometheus
// does on every scrape (level 1: a fraction of level 6's CPU for a few
// more bytes; bench/scrape_vs_node_exporter.sh measures a scrape). Owned by
// the Server.
//
// Series of its own: roced_metrics_requests_total{code} and
// roced_metrics_response_bytes_total (bytes sent, after compression).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/serve/basic_auth.h"
#include "agent/serve/tls_server_context.h"
#include "agent/serve/web_config.h"
#include "model/readiness.h"
#include "prometheus/collectable.h"

class CivetServer;

namespace roced::agent {

// The gzip level of /metrics responses: 1 compresses roced's exposition
// about 7x (level 6: 9x) in a third of the time.
inline constexpr int kMetricsGzipLevel = 1;

// Bounds that keep idle and slow clients (slowloris) from holding the
// endpoint. civetweb serves one connection per worker thread, from the
// accept until the connection closes, and queues accepted connections for
// the workers. With 2 workers and civetweb's 30 s request timeout, four
// connections that sent nothing (reopened when closed) made every scrape
// fail; so:
//
// Worker threads: a scrape finds a free worker while fewer than this many
// connections are held open by others.
inline constexpr int kMetricsWorkers = 32;
// Accepted connections waiting for a worker; with the workers, the most
// connections civetweb holds. Past it civetweb stops accepting and new
// connections wait in the kernel's listen queue (kMetricsListenBacklog).
inline constexpr int kMetricsConnectionQueue = 32;
inline constexpr int kMetricsListenBacklog = 64;
// From the accept (or the end of the previous request), the TLS handshake
// and the whole request head must arrive within this, and each response
// write must complete within it: a connection that sends nothing holds a
// worker this long at most. A scrape on loopback takes about 1 ms, over
// TLS about 2 ms.
inline constexpr int kMetricsRequestTimeoutMs = 5000;
// A kept-alive connection's wait for its next request (civetweb closes each
// connection after one request unless keep-alive is enabled; it is not).
inline constexpr int kMetricsKeepAliveTimeoutMs = 500;

class MetricsHandler;
class ReadyzHandler;

class MetricsEndpoint {
 public:
  // Listens on `civet_listen` (civetweb's form: "+9471", "127.0.0.1:9471";
  // see CivetListenAddress) with `web`: HTTPS when web.tls is set (its files
  // loaded now: a missing or mismatched file is INVALID_ARGUMENT naming the
  // field and file), basic authentication in place before it returns, so
  // nothing registered afterwards is ever served without it. A failed bind
  // is UNAVAILABLE; an IPv6 address ("[::1]:9471") where civetweb has no
  // IPv6 (CanListenOnIpv6) is INVALID_ARGUMENT saying what to give instead.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(const std::string& civet_listen,
                                                                 const WebConfig& web);
  // Whether civetweb can listen on `civet_listen` at all (an IPv6 address
  // needs an IPv6 build); checked before anything binds.
  static absl::Status CheckListenAddress(const std::string& civet_listen);
  // Whether this process's civetweb can listen on IPv6 addresses. Debian
  // 12's civetweb (1.15) is built without IPv6: there "+9471" (what
  // "[::]:9471" becomes) listens on every IPv4 address only, and an IPv6
  // address cannot be listened on at all.
  static bool CanListenOnIpv6();
  // Stops the listener and waits for requests in flight.
  ~MetricsEndpoint();

  // Served from the next scrape on, in registration order; an expired one
  // is skipped and dropped.
  void RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& collectable);
  // Serves GET /readyz from `readiness` (called per request, from the
  // server's threads): 200 "ok", or 503 with the checks; every check with
  // ?verbose. Behind the same authentication as /metrics. Once.
  void ServeReadiness(std::function<model::Readiness()> readiness);
  std::vector<int> GetListeningPorts() const;
  // "http", "https", "https, basic auth", ... (health and log lines); ",
  // IPv4 only" where "+PORT" could not listen on IPv6 too.
  std::string Describe() const;

 private:
  MetricsEndpoint();

  std::shared_ptr<TlsServerContext> tls_;
  ClientAuth client_auth_ = ClientAuth::kNoClientCert;
  std::unique_ptr<MetricsHandler> handler_;
  std::unique_ptr<ReadyzHandler> readyz_;
  // Where the destructor knocks to wake civetweb's listening thread.
  std::string knock_host_;
  int knock_port_ = 0;
  // "+PORT" without IPv6 in civetweb: every IPv4 address only.
  bool ipv4_only_ = false;
  // Last: destroyed first, as its threads use the handler and tls_.
  std::unique_ptr<CivetServer> server_;
};

}  // namespace roced::agent
