#include "probe/responder.h"

#include <atomic>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "probe/random_id.h"
#include "probe/reason.h"
#include "util/log.h"

namespace roced::probe {

// One responder endpoint and the thread answering latency writes on it.
struct ResponderRegistry::Responder {
  std::string id;
  std::string initiator;
  roced::v1::ProbeKind kind = roced::v1::PROBE_KIND_UNSPECIFIED;
  std::unique_ptr<Endpoint> endpoint;
  std::atomic<bool> stop{false};
  std::thread server;
  absl::Time expires;
};

ResponderRegistry::ResponderRegistry(EndpointFactory* factory, LocalPortFn local_port,
                                     size_t max_endpoints)
    : factory_(factory), local_port_(std::move(local_port)), max_endpoints_(max_endpoints) {}

ResponderRegistry::~ResponderRegistry() { Shutdown(); }

absl::Status ResponderRegistry::AtLimit() const {
  if (responders_.size() < max_endpoints_) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrCat(
      responders_.size(), " probe endpoints open; the limit is ", max_endpoints_));
}

absl::StatusOr<std::unique_ptr<Endpoint>> ResponderRegistry::CreateConnected(
    const roced::v1::OpenEndpointRequest& request) const {
  if (factory_ == nullptr) return absl::FailedPreconditionError(kNoEngineMessage);
  absl::StatusOr<LocalPort> local = local_port_();
  if (!local.ok()) return absl::FailedPreconditionError(local.status().message());
  EndpointSpec spec = SpecOn(*local);
  spec.kind = request.kind();
  spec.size = request.size();
  spec.qps = static_cast<uint32_t>(request.initiator_qps_size());
  spec.outstanding = 1;  // the responder writes only to answer latency pings
  spec.busy_poll = request.busy_poll();
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint = factory_->Create(spec);
  if (!endpoint.ok()) {
    const absl::StatusCode code = endpoint.status().code() == absl::StatusCode::kResourceExhausted
                                      ? absl::StatusCode::kResourceExhausted
                                      : absl::StatusCode::kFailedPrecondition;
    return absl::Status(code, endpoint.status().message());
  }
  std::vector<roced::v1::QpEndpoint> remote(request.initiator_qps().begin(),
                                            request.initiator_qps().end());
  if (absl::Status s = (*endpoint)->Connect(remote, request.traffic_class()); !s.ok()) {
    return absl::InvalidArgumentError(s.message());
  }
  return endpoint;
}

absl::StatusOr<roced::v1::OpenEndpointResponse> ResponderRegistry::Open(
    const roced::v1::OpenEndpointRequest& request) {
  if (absl::Status s = ValidateOpenRequest(request); !s.ok()) return s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (absl::Status s = AtLimit(); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Endpoint>> endpoint = CreateConnected(request);
  if (!endpoint.ok()) return endpoint.status();

  auto responder = std::make_shared<Responder>();
  responder->id = RandomId();
  responder->initiator = request.initiator();
  responder->kind = request.kind();
  responder->endpoint = std::move(*endpoint);
  const uint32_t lease = LeaseSeconds(request.lease_seconds());
  responder->expires = absl::Now() + absl::Seconds(lease);

  roced::v1::OpenEndpointResponse response;
  response.set_endpoint_id(responder->id);
  response.set_device(responder->endpoint->device());
  for (const auto& qp : responder->endpoint->local()) *response.add_responder_qps() = qp;

  {
    std::lock_guard<std::mutex> lock(mu_);
    // Checked again: other opens ran while this one created its endpoint.
    if (shut_down_) return absl::UnavailableError("agent is stopping");
    if (absl::Status s = AtLimit(); !s.ok()) return s;
    if (request.kind() == roced::v1::PROBE_KIND_LATENCY) {
      Responder* r = responder.get();
      r->server = std::thread([r] {
        absl::Status s = r->endpoint->ServeLatency(&r->stop);
        if (!s.ok()) {
          LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
                   << " stopped answering: " << ReasonOf(s) << ": " << s.message();
        }
      });
    }
    responders_[responder->id] = responder;
  }
  LOG_DEBUG << "probe endpoint " << responder->id << " open for " << request.initiator() << " ("
            << ProbeKindName(request.kind()) << ", " << request.size() << " B, lease " << lease
            << " s)";
  return response;
}

void ResponderRegistry::Release(const std::shared_ptr<Responder>& responder) {
  responder->stop.store(true);
  if (responder->server.joinable()) responder->server.join();
  responder->endpoint.reset();
}

absl::Status ResponderRegistry::Close(const std::string& endpoint_id) {
  std::shared_ptr<Responder> responder;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = responders_.find(endpoint_id);
    if (it == responders_.end()) {
      return absl::NotFoundError(
          absl::StrCat("no probe endpoint '", endpoint_id, "' (closed, or its lease expired)"));
    }
    responder = it->second;
    responders_.erase(it);
  }
  Release(responder);
  return absl::OkStatus();
}

void ResponderRegistry::ReapExpired(absl::Time now) {
  std::vector<std::shared_ptr<Responder>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (shut_down_) return;
    for (auto it = responders_.begin(); it != responders_.end();) {
      if (it->second->expires <= now) {
        expired.push_back(it->second);
        it = responders_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (auto& r : expired) {
    LOG_INFO << "probe endpoint " << r->id << " for " << r->initiator
             << ": lease expired without CloseEndpoint; released";
    Release(r);
  }
}

void ResponderRegistry::Shutdown() {
  std::map<std::string, std::shared_ptr<Responder>> responders;
  {
    std::lock_guard<std::mutex> lock(mu_);
    shut_down_ = true;
    responders.swap(responders_);
  }
  for (auto& [id, r] : responders) Release(r);
}

size_t ResponderRegistry::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return responders_.size();
}

}  // namespace roced::probe
