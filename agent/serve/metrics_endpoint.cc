#include "agent/serve/metrics_endpoint.h"

#include <CivetServer.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "agent/serve/openssl3_shim/shim.h"
#include "metrics/exposition.h"
#include "prometheus/metric_family.h"
#include "util/gzip.h"
#include "util/log.h"
#include "util/status_macros.h"
#include "util/tcp.h"

namespace roced::agent {
namespace {

// civetweb calls init_ssl from inside CivetServer's constructor with the
// server as user data, before the constructor returns, so the TLS context
// reaches the callback through this slot, set only while one endpoint is
// being constructed.
std::mutex g_starting_mu;
TlsServerContext* g_starting = nullptr;  // guarded by g_starting_mu

// civetweb: 1 = the callback configured the SSL_CTX (certificates
// included), -1 = fail the start.
int InitSsl(void* ssl_ctx, void* /*civet_server*/) {
  if (g_starting == nullptr) return -1;
  return g_starting->Configure(static_cast<SSL_CTX*>(ssl_ctx)) ? 1 : -1;
}

// The host a local connection reaches civetweb's listener on: the one
// `civet_listen` names ("127.0.0.1:9471", "[::1]:9471"), loopback for the
// wildcard forms ("9471", "+9471").
std::string KnockHost(const std::string& civet_listen) {
  if (absl::StartsWith(civet_listen, "[")) {
    const size_t end = civet_listen.find(']');
    return end == std::string::npos ? "::1" : civet_listen.substr(1, end - 1);
  }
  const size_t colon = civet_listen.rfind(':');
  return colon == std::string::npos ? "127.0.0.1" : civet_listen.substr(0, colon);
}

// Opens a TCP connection to host:port and closes it (waiting at most
// 50 ms for it to be established): a listener blocked in poll() wakes.
void Knock(const std::string& host, int port) {
  (void)util::ConnectTcp(host, static_cast<uint16_t>(port), absl::Now() + absl::Milliseconds(50));
}

}  // namespace

// Whether the request carries a user and password `auth` admits (HTTP
// basic authentication). (Check caches successes: not const.)
bool Authorized(BasicAuth& auth, mg_connection* conn) {
  const char* header = mg_get_header(conn, "Authorization");
  if (header == nullptr) return false;
  absl::string_view value = absl::StripLeadingAsciiWhitespace(header);
  if (value.size() < 6 || !absl::EqualsIgnoreCase(value.substr(0, 6), "basic ")) return false;
  std::string decoded;
  if (!absl::Base64Unescape(absl::StripAsciiWhitespace(value.substr(6)), &decoded)) return false;
  const size_t colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  return auth.Check(decoded.substr(0, colon), decoded.substr(colon + 1));
}

// Answers 401 asking for basic authentication; returns the body's size.
size_t Unauthorized(mg_connection* conn) {
  static constexpr char kBody[] = "401 Unauthorized\n";
  mg_printf(conn,
            "HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"roced\"\r\n"
            "Content-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n\r\n%s",
            sizeof(kBody) - 1, kBody);
  return sizeof(kBody) - 1;
}

// GET /readyz, as Kubernetes components answer it: 200 "ok" when every
// check passes (each check listed with ?verbose), 503 listing them when
// one fails. Behind the same basic authentication as /metrics.
class ReadyzHandler : public CivetHandler {
 public:
  ReadyzHandler(std::shared_ptr<BasicAuth> auth, std::function<model::Readiness()> readiness)
      : auth_(std::move(auth)), readiness_(std::move(readiness)) {}

  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    if (auth_ != nullptr && !Authorized(*auth_, conn)) {
      Unauthorized(conn);
      return true;
    }
    const model::Readiness r = readiness_();
    const mg_request_info* info = mg_get_request_info(conn);
    const bool verbose = info->query_string != nullptr &&
                         absl::StrContains(absl::StrCat("&", info->query_string, "&"), "&verbose");
    const std::string body = r.ready && !verbose ? "ok\n" : model::ReadinessText(r);
    mg_printf(conn,
              "HTTP/1.1 %s\r\nContent-Type: text/plain; charset=utf-8\r\nCache-Control: no-store\r\n"
              "Content-Length: %zu\r\n\r\n",
              r.ready ? "200 OK" : "503 Service Unavailable", body.size());
    mg_write(conn, body.data(), body.size());
    return true;
  }

 private:
  const std::shared_ptr<BasicAuth> auth_;
  const std::function<model::Readiness()> readiness_;
};

// GET /metrics. civetweb runs it on its worker threads, possibly several at
// once: the collectables are copied under mu_ and collected without it.
class MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::shared_ptr<BasicAuth> auth) : auth_(std::move(auth)) {}

  void Register(const std::weak_ptr<prometheus::Collectable>& c) {
    std::lock_guard<std::mutex> lock(mu_);
    collectables_.push_back(c);
  }

  bool has_auth() const { return auth_ != nullptr; }
  const std::shared_ptr<BasicAuth>& auth() const { return auth_; }

  bool handleGet(CivetServer* /*server*/, mg_connection* conn) override {
    if (auth_ != nullptr && !Authorized(*auth_, conn)) {
      Count(401, Unauthorized(conn));
      return true;
    }
    // The text and its compressed form live for this scrape only: freed,
    // they stay in the process's heap (main's trim threshold) for the next
    // scrape on either worker, so the workers hold one set between them,
    // not one each. Sized from the last scrape: no regrowth.
    std::string text;
    text.reserve(last_text_size_.load(std::memory_order_relaxed));
    WriteAll(&text);
    last_text_size_.store(text.size() + text.size() / 16, std::memory_order_relaxed);
    const std::string* body = &text;
    const bool gzip = util::AcceptsGzip(mg_get_header(conn, "Accept-Encoding"));
    std::string compressed;
    if (gzip) {
      std::unique_ptr<util::GzipEncoder> encoder = TakeEncoder();
      if (encoder->Compress(text, &compressed).ok()) body = &compressed;
      ReturnEncoder(std::move(encoder));
    }
    mg_printf(conn, "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n%sContent-Length: %zu\r\n\r\n",
              metrics::kTextContentType, body == &compressed ? "Content-Encoding: gzip\r\n" : "",
              body->size());
    mg_write(conn, body->data(), body->size());
    Count(200, body->size());
    return true;
  }

 private:
  // Every collectable's families, in registration order: as text from
  // those that write it themselves, else through metrics::AppendFamily.
  void WriteAll(std::string* out) {
    std::vector<std::shared_ptr<prometheus::Collectable>> live;
    {
      std::lock_guard<std::mutex> lock(mu_);
      live.reserve(collectables_.size());
      for (auto it = collectables_.begin(); it != collectables_.end();) {
        if (std::shared_ptr<prometheus::Collectable> c = it->lock()) {
          live.push_back(std::move(c));
          ++it;
        } else {
          it = collectables_.erase(it);
        }
      }
    }
    for (const auto& c : live) {
      if (const auto* text = dynamic_cast<const metrics::TextCollectable*>(c.get())) {
        text->AppendText(out);
      } else {
        for (const prometheus::MetricFamily& f : c->Collect()) metrics::AppendFamily(f, out);
      }
    }
    std::vector<prometheus::MetricFamily> own;
    AppendOwnFamilies(&own);
    for (const prometheus::MetricFamily& f : own) metrics::AppendFamily(f, out);
  }

  // roced_metrics_requests_total{code} and roced_metrics_response_bytes_total.
  void AppendOwnFamilies(std::vector<prometheus::MetricFamily>* families) {
    prometheus::MetricFamily requests{
        "roced_metrics_requests_total",
        "Requests the /metrics endpoint answered, by HTTP status code (before this one).",
        prometheus::MetricType::Counter,
        {}};
    std::lock_guard<std::mutex> lock(stats_mu_);
    for (const auto& [code, n] : requests_by_code_) {
      prometheus::ClientMetric m;
      m.label = {{"code", absl::StrCat(code)}};
      m.counter.value = static_cast<double>(n);
      requests.metric.push_back(std::move(m));
    }
    prometheus::MetricFamily bytes{
        "roced_metrics_response_bytes_total",
        "Bytes of /metrics response bodies sent, after compression (before this one).",
        prometheus::MetricType::Counter,
        {}};
    prometheus::ClientMetric b;
    b.counter.value = static_cast<double>(response_bytes_);
    bytes.metric.push_back(std::move(b));
    families->push_back(std::move(requests));
    families->push_back(std::move(bytes));
  }

  // Deflate states (48 KiB each) are pooled, not kept per thread: as many
  // exist as scrapes ever ran at once, not one per worker that served one.
  std::unique_ptr<util::GzipEncoder> TakeEncoder() {
    {
      std::lock_guard<std::mutex> lock(encoders_mu_);
      if (!encoders_.empty()) {
        std::unique_ptr<util::GzipEncoder> e = std::move(encoders_.back());
        encoders_.pop_back();
        return e;
      }
    }
    return std::make_unique<util::GzipEncoder>(kMetricsGzipLevel);
  }
  void ReturnEncoder(std::unique_ptr<util::GzipEncoder> e) {
    std::lock_guard<std::mutex> lock(encoders_mu_);
    encoders_.push_back(std::move(e));
  }

  void Count(int code, size_t bytes) {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++requests_by_code_[code];
    response_bytes_ += bytes;
  }

  const std::shared_ptr<BasicAuth> auth_;
  std::mutex mu_;  // guards collectables_
  std::atomic<size_t> last_text_size_{0};
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  std::mutex encoders_mu_;  // guards encoders_
  std::vector<std::unique_ptr<util::GzipEncoder>> encoders_;
  std::mutex stats_mu_;  // guards the two below
  // 200 and 401 exist from the start (a series that appears only once
  // something went wrong is one a rate() cannot see begin).
  std::map<int, uint64_t> requests_by_code_{{200, 0}, {401, 0}};
  uint64_t response_bytes_ = 0;
};

MetricsEndpoint::MetricsEndpoint() = default;

bool MetricsEndpoint::CanListenOnIpv6() {
  constexpr unsigned kFeatureIpv6 = 8;  // civetweb.h: mg_check_feature, "8  support IPv6"
  return mg_check_feature(kFeatureIpv6) != 0;
}

absl::Status MetricsEndpoint::CheckListenAddress(const std::string& civet_listen) {
  if (absl::StartsWith(civet_listen, "[") && !CanListenOnIpv6()) {
    // civetweb would fail with "null context when constructing CivetServer".
    return absl::InvalidArgumentError(
        "an IPv6 address needs civetweb built with IPv6, and this one is not (as Debian 12 ships it): give an "
        "IPv4 address, or [::]:PORT or 0.0.0.0:PORT to listen on every IPv4 address");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const std::string& civet_listen, const WebConfig& web) {
  if (absl::Status s = CheckListenAddress(civet_listen); !s.ok()) return s;
  std::unique_ptr<MetricsEndpoint> ep(new MetricsEndpoint());
  std::vector<std::string> options = {
      "listening_ports", civet_listen,
      "num_threads", absl::StrCat(kMetricsWorkers),
      "connection_queue", absl::StrCat(kMetricsConnectionQueue),
      "listen_backlog", absl::StrCat(kMetricsListenBacklog),
      "request_timeout_ms", absl::StrCat(kMetricsRequestTimeoutMs),
      "keep_alive_timeout_ms", absl::StrCat(kMetricsKeepAliveTimeoutMs)};
  CivetCallbacks callbacks;
  if (web.tls) {
    // civetweb looks OpenSSL up by the names these libraries carry; calling
    // them keeps them linked (agent/serve/openssl3_shim/libssl_shim.c says why).
    if (roced_civetweb_libssl_shim() != 1 || roced_civetweb_libcrypto_shim() != 1) {
      return absl::InternalError("the OpenSSL 3 shim for civetweb is not loaded");
    }
    ASSIGN_OR_RETURN(ep->tls_, TlsServerContext::Create(*web.tls));
    ep->client_auth_ = web.tls->client_auth;
    options[1] += "s";  // civetweb: a port ending in 's' speaks TLS
    callbacks.init_ssl = &InitSsl;
  }
  // In place before the server starts: no request is ever served without it.
  ep->handler_ = std::make_unique<MetricsHandler>(
      web.basic_auth_users.empty() ? nullptr
                                   : std::make_shared<BasicAuth>(web.basic_auth_users));
  try {
    std::lock_guard<std::mutex> lock(g_starting_mu);
    g_starting = ep->tls_.get();
    struct Reset {
      ~Reset() { g_starting = nullptr; }
    } reset;
    ep->server_ = std::make_unique<CivetServer>(options, &callbacks);
  } catch (const std::exception& e) {
    // civetweb reports a failed bind (and a refused TLS set-up) this way.
    return absl::UnavailableError(absl::StrCat("cannot listen on ", civet_listen, ": ", e.what()));
  }
  ep->server_->addHandler("/metrics", ep->handler_.get());
  ep->ipv4_only_ = absl::StartsWith(civet_listen, "+") && !CanListenOnIpv6();
  if (ep->ipv4_only_) {
    LOG_INFO << "metrics endpoint on every address (" << civet_listen
             << ") listens on IPv4 only: this civetweb is built without IPv6";
  }
  const std::vector<int> ports = ep->server_->getListeningPorts();
  if (!ports.empty()) {
    ep->knock_host_ = KnockHost(civet_listen);
    ep->knock_port_ = ports.front();
  }
  return ep;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (!server_) return;
  // civetweb's close() raises its stop flag and waits for its listening
  // thread, which looks at the flag only when its poll() of the listening
  // socket returns: on an idle endpoint up to 2 s later, which would be
  // nearly all of roced's stop time. A connection every 10 ms while close()
  // waits ends that poll at once; one that lands before the flag is an
  // ordinary connection that sends nothing and closes.
  std::atomic<bool> closed{false};
  std::thread knocker;
  if (knock_port_ != 0) {
    knocker = std::thread([this, &closed] {
      while (!closed.load()) {
        Knock(knock_host_, knock_port_);
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    });
  }
  server_->close();
  closed.store(true);
  if (knocker.joinable()) knocker.join();
  server_.reset();
}

void MetricsEndpoint::ServeReadiness(std::function<model::Readiness()> readiness) {
  readyz_ = std::make_unique<ReadyzHandler>(handler_->auth(), std::move(readiness));
  server_->addHandler("/readyz", readyz_.get());
}

void MetricsEndpoint::RegisterCollectable(const std::weak_ptr<prometheus::Collectable>& c) {
  handler_->Register(c);
}

std::vector<int> MetricsEndpoint::GetListeningPorts() const {
  return server_->getListeningPorts();
}

std::string MetricsEndpoint::Describe() const {
  std::string out = tls_ ? "https" : "http";
  if (tls_ && client_auth_ != ClientAuth::kNoClientCert) {
    absl::StrAppend(&out, ", client certificates: ", ClientAuthName(client_auth_));
  }
  if (handler_->has_auth()) absl::StrAppend(&out, ", basic auth");
  if (ipv4_only_) absl::StrAppend(&out, ", IPv4 only");
  return out;
}

}  // namespace roced::agent
